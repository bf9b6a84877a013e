// Package coordinator is what `aipm run` runs: it watches a project's store and starts each
// AI agent's configured command (settings.agent_commands, rendered from the templates here)
// when the agent has task or chat work and no live session for it, within the project's
// process limit, holding back managers whose sub-tasks are others' work and backing off
// from starts that fail or change nothing. It can print the project's timeline as it
// happens.
//
// It reaches the store only through filestore's rules, and wakes through the tools package's
// watcher (the same one an `aipm mcp` server uses). It may import filestore, its
// sub-packages, tools and watch; it imports nothing of cmd/aipm, so the command line, the
// demo and tests wire it alike.
package coordinator
