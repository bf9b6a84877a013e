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
//	  agents/<agent-id>/notifications.jsonl  the agent's notifications (interrupts, notices)
//	  tasks/<task-id>.json          one task per file
//	  conversations/<cnv-id>.json   an AI↔AI conversation: its two sides, state, turns, end
//	  delegations/<dlg-id>.json     a task session's request to its own chat session
//	                                (chat_session_id: the session it was last handed to)
//	  executions/<exec-id>.json     a task session's run record
//	  events.jsonl                  history: every change, who made it, when, from what to what
//	  .gitignore                    ignores runtime/, execution logs and temp files
//	  .gitattributes                *.jsonl merge=union; entity files merge=aipm (merge.go)
//	  runtime/                      git-ignored machine-local state:
//	    sessions/<ses-id>.json        live sessions (token stored hashed)
//	    sessions/ended/<ses-id>.json  ended sessions, moved out of the way of work detection
//	    sessions/latest/<agent-id>.json  when the agent's latest chat session started, and when
//	                                  the latest one to end ended (dates a session_expired)
//	    changes.log                   the change journal: paths written through aipm (below)
//	    credentials/<agent-id>.json   salted passkey hashes (never plain text)
//	    cursors/<agent-id>.json       mailbox read offsets (and .read.jsonl, the ids read)
//	    chat/<agent-id>.json          whether a human has a chat with the agent open
//	    notifications/<ses-id>.read.jsonl  the notifications that session has read, with when
//	    notifications/<ses-id>.json        its index: inbox offset, unread before it
//	    locks/store.lock              the store lock file
//	    trust/commands.json           the agent commands this machine approved to run:
//	                                  {"approved": {<sha256 of name, command, env>: {name,
//	                                  command, env, approved_at}}} (trust.go)
//
// Committed: everything a teammate or a later clone should see — the project, agents, tasks,
// mailboxes, notifications, conversations, delegations, execution records and history.
// Ignored: secrets, sessions, read cursors and notification read state, open chats, locks
// and process state, which mean nothing on another machine.
//
// # Blocks and their cascade
//
// Blocking a task (→ blocked) blocks its unfinished descendants with it, each with the
// reason "parent task <id> blocked: …"; such a descendant also records the cascade in two
// fields written only then: "cascade_from" (the ancestor whose block it was) and
// "status_before_cascade" (its status before). Any later status change of the descendant
// clears both. When that ancestor leaves blocked for todo or in_progress — by a tool, the
// CLI or, noticed by the coordinator (LiftCascades), a hand edit of its file — every
// descendant still blocked by its cascade returns to the status it had (in_progress only if
// the ancestor is in_progress again, else todo), deepest first, with a history event whose
// reason says why. A descendant blocked for its own reason, or by a deeper cascade whose
// cause still holds, stays blocked.
//
// # Chat
//
// A message is two lines (SPEC §4.5): one in the sender's chat.jsonl, with "receiverId",
// and one in the receiver's, without — the original system's format, camelCase keys:
//
//	{"id":"msg_…","senderId":"w1","receiverId":"w2","content":"…","createdAt":"…","relatedTaskId":"tsk_…","conversationId":"cnv_…"}
//
// Both lines are appended and fsynced under the store lock before the sender is answered,
// so an acknowledged message is in both mailboxes, and every mailbox is in send order.
// Messages from the pseudo-sender "system" have only the receiver's line. Content is 1 to
// settings.message_max_chars (4000) characters, counted in Unicode code points. An agent
// reads its own mailbox only; its read position is a byte offset in
// runtime/cursors/<agent-id>.json, so reading new mail costs what is new, and a line
// appended during a read lies past the offset and stays unread. The cursor fingerprints the
// bytes before its offset: when a `git pull` rewrites the mailbox under it (a rebase puts
// the other clone's lines before ones already read), it is rebuilt from
// runtime/cursors/<agent-id>.read.jsonl, the ids of the messages read, so no message is
// lost or read twice. Recent context and
// conversation pages are read from the end of the file backward. Messages are not history
// events: the mailboxes are their record.
//
// Two AI agents exchange messages only inside a conversation (seed 002), whose id every
// such message carries. A conversation is pending until the participant's chat session
// picks it up, then active; it becomes terminating when either side ends it, when a
// message reaches max_turns (default 20, 2..40), or after
// CONVERSATION_ACTIVE_TIMEOUT_SECONDS (setting conversation_active_timeout_seconds,
// default 600) without a message; and ended once both sides have been told ("notified"
// lists who has). Pending longer than CONVERSATION_PENDING_TIMEOUT_SECONDS (setting
// conversation_pending_timeout_seconds, default 300), it is expired, and its initiator is
// told once. Timeouts need no daemon: every reader applies the ones that are due, dating
// the change at the deadline, and records it in the history as actor "system", via
// "timeout"; every running `aipm mcp` and `aipm run` also applies them within a second of
// the deadline, so the files are true with nobody reading, and each is written once. An
// active conversation one of whose sides has had no live chat session for
// CONVERSATION_SESSION_GRACE_SECONDS (setting conversation_session_grace_seconds, default
// 60) becomes terminating with end_reason session_expired, dated at the end of that grace,
// the same way. An unordered pair of agents has at most one pending or active conversation.
//
// A delegation (seed 003) is pending until the delegating agent's chat session takes it
// (processing), and completed or failed when that session reports the outcome;
// conversation_id links the latest conversation started for it, and such a conversation
// carries the delegation's task_id.
//
// # Notifications
//
// A notification (SPEC §4.8, seeds 000 and 004) is one line of the target agent's
// notifications.jsonl, appended and fsynced under the store lock like a message:
//
//	{"id":"ntf_…","target_agent_id":"w1","target_purpose":"task","target_session_id":"ses_…","type":"interrupt","action":"cancel","priority":"high","task_id":"tsk_…","conversation_id":"cnv_…","from_agent_id":"owner","message":"…","instruction":"…","key":"…","created_at":"…"}
//
// type is interrupt, status_change, message, chat_session_notification, conversation or
// delegation; action a lower-case word (cancel, pause, resume, blocked, check_chat, …);
// priority normal or high; target_session_id, task_id, conversation_id, from_agent_id and
// key are optional. A notification is for the sessions of its agent whose purpose matches
// target_purpose (task, chat or any) and that were live when it was made — or, if it names
// one, for that session only — so a chat_session_notification (always purpose task)
// reaches the task session and never the chat session that sent it, and a new session
// does not inherit what its predecessors were told. key deduplicates: an inbox holds at
// most one notification per key (e.g. project:<id>:paused:v7), however many processes
// notice the change. Read state is per session: runtime/notifications/<ses-id>.read.jsonl
// logs the ids it has read, with when, and <ses-id>.json indexes the inbox — a byte
// offset and the session's unread notifications before it — so the count the MCP
// envelope makes on every tool call reads only what arrived since. A fingerprint of the
// bytes before the offset detects an inbox rewritten by a merge; the index is then
// rebuilt, and the read log keeps what was read read. Reading for one session never marks
// anything read for another. Notifications are not history events: the inbox is their
// record.
//
// The process serving an agent's live chat session adds a message notification (action
// new_message, key message:<msg-id>:<ses-id>) for a message that arrives while that session
// is not waiting in get_next_action; get_pending_messages marks them read.
//
// Pausing the project (project.json status paused, by a human owner or manager) stops new
// sessions and sends every agent with a live session an interrupt (action pause);
// resuming sends a status_change (action resume).
//
// # Chat → task operations
//
// A chat session may start or change a task at a superior's request (SPEC §5.2, seed
// 000). The request is checked in a fixed order — requester exists, is a member, is an
// ancestor of the caller, the caller may touch the task, the requester really messaged
// the caller (in the named conversation, or among its last 20 received messages) — and
// then the change obeys the task rules like any other. The task records the caller as
// status_changed_by; the history event records requester_id, conversation_id and the
// fields changed.
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
// # Caches
//
// The files are the truth. A Store keeps in memory, as a cache only, the parsed files of
// tasks/, conversations/ and delegations/ with the sets hot paths look up, and the byte
// offsets of each entity's lines in events.jsonl and of each key in a notification inbox.
// runtime/changes.log is its change journal: every entity write through aipm appends the
// path it replaced ("tasks/tsk_….json"), one line, under the store lock after the rename;
// a reader re-checks exactly the paths appended since it last looked. A journal over 4 MiB
// is started anew (a new file), and a reader that sees a new file re-checks every cached
// file by identity (inode, size, modification time). Changes that bypass the journal —
// editors, git — reach a process through its watcher (Store.Changed); a process without
// one compares every file by identity on each query.
//
// # Rules
//
// Every writer — MCP tool, CLI command, coordinator — changes state through the verbs of
// Store, which apply the same rules inside the lock: the task status table and its entry
// rules (SPEC §4.3), dependency validation (no self-reference, no cycles), one live session
// per agent and purpose, one live conversation per pair of agents, the AI↔AI conversation
// rule, and attribution of every change to the real actor in events.jsonl.
// A file a human broke by hand is never overwritten: the write fails naming path and line,
// and Check (`aipm doctor`) lists every such problem.
//
// # Merging clones
//
// Two clones of a project merge by Git. JSONL files are unions of lines. Entity files
// (project.json, agents/<id>/agent.json, tasks/, conversations/, delegations/,
// executions/) name the merge driver `aipm merge-driver %O %A %B %P`, registered in each
// clone's Git config by `aipm init`; it runs Merge: field by field, a field changed on one
// side taken, one changed on both decided by a rule that keeps the entity valid (a task's
// status: reachable from the ancestor's by the transition table, the later
// status_changed_at winning), free text changed on both sides a conflict marked around
// those fields alone, version one more than both sides. Store reads report a file with
// conflict markers as an unresolved merge, and Check names the entity, the fields and
// both values.
//
// # A clone is untrusted input
//
// Everything committed under .ai-pm may come from a stranger, so the store never follows a
// link there (safepath.go): every open for reading, appending or replacing checks with
// Lstat that .ai-pm and each directory between it and the file is a real directory, opens
// the file with O_NOFOLLOW and O_NONBLOCK, and refuses anything but a regular file with an
// UnsafePathError that names the path and says to remove it. A JSON entity over 4 MiB and
// a JSONL read over 256 MiB are refused (TooLargeError) instead of being read into memory.
// Check reports every link and special file. An agent file's hierarchy is checked: only
// project.json's owner (a human) is "owner"; another agent claiming it is treated as a
// worker (AI) or manager (human) and reported. settings.agent_commands run only with this
// machine's approval (runtime/trust/commands.json): a pulled change to a command withdraws
// it until `aipm trust`.
package filestore
