// Package ui is the web view of a project, served by `aipm ui`: one page (HTML, CSS and
// JavaScript embedded in the binary, no framework, no build step) showing the task board,
// the agents and their live sessions, what waits for the human, a chat pane per agent, and
// buttons for what the command line can do.
//
// The page is live without polling: the server holds a server-sent-events stream per page
// and writes to it when the process's watcher reports a change under .ai-pm/ (made by this
// page, the CLI, an agent, an editor or a `git pull`). The page reads the whole state once
// (GET /api/state); each "change" event then carries the changed paths, the rows of the
// tasks whose files changed (their ids taken from the file names), the ids of those whose
// file is gone, and the project, agents and attention list when they differ from what the
// stream sent last — so a change costs what changed, not what the project holds. The server
// keeps only that copy of the task rows, rebuilt at every state read; every answer is read
// from the store, and every button is a store call (CreateTask, EditTask, SetTaskStatus,
// AssignTask, ApproveTask, RejectTask, SendMessage, OpenChat, CloseChat, SetProjectStatus)
// by the acting human, recorded via "ui" — the same rules the CLI goes through. The status
// menu and drag and drop offer the moves StatusMoves allows now, with the store's reason
// beside the others; New task and Edit take task ids as the CLI does (a unique prefix). A task's diff, and the retry
// and abandon of a landing that waits for a person, go through the clone's merge queue
// (Options.Queue, land.Queue wired by cmd/aipm), as `aipm task show` and `aipm land
// retry|abandon` do. Any number of `aipm ui` processes and agents may run at once.
//
// It answers only requests whose Host names the address it serves (a page of another site
// whose name was rebound to 127.0.0.1 is refused), and only requests carrying the
// token for everything but the page itself: the token travels in the URL the command
// prints, in the X-Aipm-Token header of the page's requests, and in the query of its event
// stream. `aipm ui` keeps one token per machine (ui-token in the machine directory that
// holds this repository's approvals, outside the clone), so a tab survives a restart on
// the same address. It serves the token holder first (Gate): a connection counts against
// a small budget, per client (on Linux the local user that opened it) and in all, until a
// request on it carries the token, and is closed 5 seconds after it was accepted if none
// has; accepting never waits, and a connection past the budget closes the oldest of the
// client holding most, so another user flooding the port pushes out only its own. A
// connection whose bytes hold the token, read or waiting unread, is never the one closed.
//
// It imports filestore and watch, never cmd/aipm (which wires it up) or tools.
package ui
