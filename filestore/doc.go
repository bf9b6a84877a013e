// Package filestore is aipm's database: a directory of JSON and JSONL files under a
// repository's .ai-pm/, shared safely by any number of processes (agents' `aipm mcp`
// servers, the `aipm` CLI, the coordinator) and by humans with an editor and Git.
//
// # On-disk format
//
//	.ai-pm/
//	  project.json                  the project: id, name, status, owner_id, settings
//	  agents/<agent-id>/agent.json  an agent's profile (human or ai; owner, manager, worker)
//	  agents/<agent-id>/chat.jsonl  the agent's mailbox: every message it sent or received
//	  tasks/<task-id>.json          one task per file
//	  executions/<exec-id>.json     a task session's run record
//	  events.jsonl                  history: every change, who made it, when, from what to what
//	  .gitignore                    ignores runtime/, execution logs and temp files
//	  .gitattributes                *.jsonl merge=union
//	  runtime/                      git-ignored machine-local state:
//	    sessions/<ses-id>.json        live and ended sessions (token stored hashed)
//	    credentials/<agent-id>.json   salted passkey hashes (never plain text)
//	    cursors/<agent-id>.json       mailbox read offsets
//	    locks/store.lock              the store lock file
//
// Committed: everything a teammate or a later clone should see — the project, agents, tasks,
// mailboxes, execution records and history. Ignored: secrets, sessions, read cursors, locks
// and process state, which mean nothing on another machine.
//
// # Format rules
//
// JSON files are written by Go structs with a fixed key order, two-space indented, with a
// trailing newline, times in UTC RFC 3339 with sub-second precision. Every entity carries
// "version" (incremented on each write) and "updated_at". Writing, reading and rewriting an
// entity yields identical bytes, so `git diff` shows only real changes.
//
// JSONL files hold one compact JSON object per line and are append-only. Each line is
// written with a single write(2) under the store lock. A last line without '\n' is a torn
// write: readers ignore it and the next writer truncates it before appending.
//
// Generated IDs are a type prefix (tsk_, ses_, evt_, exe_, msg_, cnv_, dlg_, ntf_, prj_)
// plus 26 Crockford base32 characters: 48 bits of milliseconds and 80 random bits. They sort
// by creation time and never collide across branches or machines. Agent IDs are chosen by
// humans and must match ^[a-z0-9][a-z0-9._-]{0,62}$. Every ID is validated before it
// becomes part of a path, so no input can name a file outside .ai-pm.
//
// # Locking and durability
//
// A read-modify-write holds the store lock: a sync.Mutex for goroutines of one process and
// an exclusive flock(2) on runtime/locks/store.lock for other processes. The lock file is
// never replaced; data files are, by rename, so locking them would lock a dead inode.
// Entity writes are atomic: temp file in the same directory, fsync, rename, fsync of the
// directory. Readers take no lock: they see the old file or the new one, never a mix. Temp
// files older than a minute, left by killed writers, are removed when a store is opened.
//
// # Rules
//
// Every writer — MCP tool, CLI command, coordinator — changes state through the verbs of
// Store, which apply the same rules inside the lock: the task status table and its entry
// rules (SPEC §4.3), dependency validation (no self-reference, no cycles), one live session
// per agent and purpose, and attribution of every change to the real actor in events.jsonl.
// A file a human broke by hand is never overwritten: the write fails naming path and line,
// and Check (`aipm doctor`) lists every such problem.
package filestore
