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
//	  agents/<agent-id>/reads.jsonl the ids of the messages the agent has read, with when
//	                                ({"at", "ids"} a line): its read state, on every machine
//	  tasks/<task-id>.json          one task per file; in a Git repository, "landing" records
//	                                its branch and how its code reaches the target branch
//	                                (state, base, commit, landed_commit, attempts; landing.go),
//	                                and a rework's "rework_of" the task it does again
//	  conversations/<cnv-id>.json   an AI↔AI conversation: its two sides, state, turns, end
//	  delegations/<dlg-id>.json     a task session's request to its own chat session
//	                                (chat_session_id: the session it was last handed to)
//	  executions/<exec-id>.json     a task session's run record, with the session's tool calls
//	                                and the bytes of their arguments and results once it closes
//	  events.jsonl                  history: every change, who made it, when, from what to what
//	  leases/<agent-id>.json        the agent's lease: the machine that runs it, until when,
//	                                and whether it has a live chat session there (lease.go)
//	  allowed_signers               the keys that may sign the state branch's commits, in Git's
//	                                gpg.ssh.allowedSignersFile format ("<principal> <key type>
//	                                <key>" a line); read only with settings.require_signed_state,
//	                                and then as this clone's last commit has it (gitstate)
//	  .gitignore                    ignores runtime/, execution logs and temp files
//	  .gitattributes                *.jsonl merge=union; entity files merge=aipm (merge.go)
//	  .git                          (a file) when .ai-pm is the worktree of the state branch
//	                                aipm/state (cmd/aipm/internal/gitstate); Git's, not aipm's
//	  runtime/                      git-ignored machine-local state:
//	    machine.json                  this machine's id {"id", "created_at"}, made by Init
//	                                  and Prepare or on first use (AIPM_MACHINE_ID overrides it)
//	    sessions/<ses-id>.json        live sessions (token stored hashed)
//	    sessions/ended/<ses-id>.json  ended sessions, moved out of the way of work detection
//	    sessions/latest/<agent-id>.json  when the agent's latest chat session started, and when
//	                                  the latest one to end ended (dates a session_expired)
//	    usage/<ses-id>.json           the session's tool calls so far: {"tool_calls",
//	                                  "request_bytes", "result_bytes"}, written by its process
//	                                  after each call (usage.go)
//	    journal/changes.log           the change journal: paths written through aipm (below)
//	    journal/delivery.json         the message being sent, {"to","message"}, between its two
//	                                  mailbox lines; empty when no send is under way. No
//	                                  watcher watches journal/ (UnwatchedDirs)
//	    index/<dir>.idx               a copy of the cache of tasks/, conversations/ or
//	                                  delegations/ a process starts from (# Caches);
//	                                  <dir>.lock is held by the process writing it
//	    index/events.idx              events.jsonl's lines by entity id (# Caches)
//	    index/tasks.seq               the highest task sequence number, as of a journal
//	                                  position, for the next task id (# Caches)
//	    cursors/<agent-id>.json       mailbox read offsets: this machine's cache of reads.jsonl
//	    chat/<agent-id>.json          whether a human has a chat with the agent open
//	    notifications/<ses-id>.read.jsonl  the notifications that session has read, with when
//	    notifications/<ses-id>.json        its index: inbox offset, unread before it
//	    notifications/taken/<agent-id>.jsonl  until_read notices of the agent a session has
//	                                  read: {"id","session_id","at"} (later sessions skip them)
//	    locks/store.lock              the store lock file
//	    locks/land.lock               held by the merge queue while it lands a task
//	    landings/<task-id>.log        the output of the project's check on that task's code
//	    tmp/                          the temp files of atomic writes, renamed into place
//
// What this machine trusts is not in the repository at all (machine_trust.go): in
// <user config dir>/aipm/repos/<name>-<hash of the store path>/, commands.json holds the
// approved agent commands ({"approved": {<sha256 of name, command, env, program>: {name,
// command, env, program: {path, sha256}, approved_at}}}, trust.go), credentials/<agent-id>.json
// the salted passkey hashes (never plain text), ui-token the web view's token (mode 0600,
// kept across `aipm ui` restarts; remove it to revoke it), and key a per-repository secret that the
// hashes of session tokens and spawn tickets are bound to, so a session or spawn record
// that came with the repository matches nothing.
//
// Committed: everything a teammate or a later clone should see — the project, agents, tasks,
// mailboxes, notifications, conversations, delegations, execution records, leases and
// history.
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
// A send first writes runtime/journal/delivery.json (fsynced), then the two lines, then empties it.
// A failed write is undone (both lines taken back, the sender gets the error); a send killed
// between the lines leaves the record, and the next send, the receiver's next read (or
// `aipm doctor --repair`) appends the missing receiver's line, found missing by message id;
// a record whose sender's line never landed is dropped.
// `aipm doctor` compares the last 1000 lines of every mailbox with the receivers' and reports
// a message found in its sender's mailbox only.
// Messages from the pseudo-sender "system" have only the receiver's line. Content is 1 to
// settings.message_max_chars (4000) characters, counted in Unicode code points. An agent
// reads its own mailbox only; its read position is a byte offset in
// runtime/cursors/<agent-id>.json, so reading new mail costs what is new, and a line
// appended during a read lies past the offset and stays unread. The cursor fingerprints the
// bytes before its offset: when a `git pull` rewrites the mailbox under it (a rebase puts
// the other clone's lines before ones already read), it is rebuilt from
// agents/<agent-id>/reads.jsonl, the ids of the messages read, so no message is lost or
// read twice. That read log is committed and merged like the mailbox: a machine that
// takes an agent over, or one whose cursor predates marks another machine made, rebuilds
// its cursor from it, so no message the agent read elsewhere is answered again. Recent context and
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
// A side whose agent is leased to another machine (below) has its chat sessions there,
// out of this machine's sight: its presence is its lease's — present while the lease is
// held and says chat_live, else absent since chat_seen_at — so session_expired means that
// machine stopped seeing a chat session of it, or stopped.
//
// A delegation (seed 003) is pending until the delegating agent's chat session takes it
// (processing), and completed or failed when that session reports the outcome — only
// from processing (seed 003: pending → processing → completed | failed);
// conversation_id links the latest conversation started for it, and such a conversation
// carries the delegation's task_id and its delegation_id (written with the conversation,
// so a chat process killed before the delegation names it leaves no conversation the
// next session's hand-over cannot find and end).
//
// # Machines and leases
//
// An agent runs on one machine at a time. leases/<agent-id>.json says which:
//
//	{"agent_id":"w1","machine_id":"laptop-x7k3pq","acquired_at":"…","renewed_at":"…","expires_at":"…","chat_live":true,"chat_seen_at":"…","updated_at":"…","version":3}
//
// `aipm run` claims the lease of an agent it has work for when the lease is missing or past
// expires_at (a takeover, recorded in the history as entity agent, change lease, from the
// old machine to the new), renews the leases it holds when a third of their length
// (AIPM_LEASE_SECONDS, default 60) is gone or the agent's chat presence changed, and
// starts only the agents whose lease it holds; a process whose agent's lease went
// elsewhere is stopped. chat_live says the agent had a live chat session on that machine
// at the last renewal; chat_seen_at is the last moment the machine knew one live (that
// renewal, or the session's end). `aipm agent move` sets machine_id (and a fresh
// expires_at) by hand; `aipm agent release` sets expires_at to now. Two machines'
// claims merge to the later acquired_at, whole; one machine's renewals to the later
// renewed_at. runtime/machine.json holds this machine's id; the coordinator passes it to
// the agents it starts, and its lock is runtime/locks/coordinator.<machine>.lock.
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
// does not inherit what its predecessors were told. The exception is "until_read": true,
// set on a notify_task_session notice made while the agent had no live task session: it
// also reaches the task sessions that start later, until one of them reads it
// (runtime/notifications/taken/<agent-id>.jsonl records which one did). key deduplicates: an inbox holds at
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
// ancestor of the caller, the caller may touch the task — and then the change obeys the
// task rules like any other. The task records the caller as status_changed_by; the
// history event records requester_id, conversation_id and the fields changed. Whether the
// requester really messaged the caller (in the named conversation, or among its last 20
// received messages) is checked too, but as the seed says it only warns: a request it
// does not find goes ahead, its event carries "warning", and a second event, the
// caller's, records it for `aipm status`:
//
//	{"at":"…","actor":"w1","via":"tool","entity":"agent","id":"w1","change":"unverified_requester","to":"tsk_…","reason":"started task tsk_… at the request of mgr","requester_id":"mgr","warning":"requester mgr sent w1 no message among its last 20 received messages"}
//
// An edit of a task's own fields (title, description, priority, dependencies,
// blocked_reason) writes one history event with "fields", the names changed, and
// "changes", each with its old and new value (dependencies as comma-separated ids):
//
//	{"at":"…","actor":"alice","via":"cli","entity":"task","id":"tsk_…","change":"updated","fields":["title","priority"],"changes":[{"field":"title","from":"Old","to":"New"},{"field":"priority","from":"medium","to":"high"}]}
//
// Events written before "changes" was kept have only "fields".
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
// # Task ids
//
// Task ids are typed by people, so they are built to be short where they are shown. A task
// id is "tsk_" and 26 Crockford base32 characters (taskid.go):
//
//	tsk_8001 k3 7qv2m0c9d4xr5t8w1yb6
//	     │    │  └ 20 random digits (100 bits)
//	     │    └ the clone's tag: 2 digits hashed from the machine's name and the store's path
//	     └ the sequence number: 4 digits, 8001 to yzzz (753,663 tasks)
//
// A new task takes the sequence number after the highest in tasks/, read under the store
// lock, so in one clone every task has its own number, ids sort in creation order (the
// listings, pages and sub-task order rely on that) and a batch's ids differ in their fourth
// digit. Listings, cards and the web view show the shortest prefix no other task id shares,
// and at least the four sequence digits: "tsk_8001" while the number is the task's alone.
// Two clones that add tasks before they meet both use the next numbers; after a merge, the
// tasks that share a number are shown with one more digit, where their clone tags differ
// (odds 1023 in 1024), and rarely two more. So in a project of 10,000 tasks no id is shown
// with more than 7 characters after "tsk_" unless two clones' tags are alike and the random
// digits agree too. Whole ids stay unique across clones by the random digits alone, and any
// unique prefix of an id (with or without "tsk_") names it on the command line. When the
// numbers run out, ids are "z" and a time-based id, which still sort after every other.
// Stores made before this scheme keep their time-based ids (tsk_01…, sorting before
// tsk_8…): they stay valid and are shown by their shortest unique prefix.
//
// # Locking and durability
//
// A read-modify-write holds the store lock: a sync.Mutex for goroutines of one process and
// an exclusive flock(2) on runtime/locks/store.lock for other processes. The lock file is
// never replaced; data files are, by rename, so locking them would lock a dead inode.
// Entity writes are atomic: temp file in runtime/tmp (beside the file when the two are on
// different filesystems), fsync, rename, fsync of the file's directory. Readers take no
// lock: they see the old file or the new one, never a mix. Watchers leave runtime/tmp,
// runtime/usage, runtime/index and runtime/locks out (UnwatchedDirs): only the rename into
// place is news. Temp files older than a minute, left by killed writers, are removed when
// a store is opened.
//
// # Caches
//
// The files are the truth. A Store keeps in memory, as a cache only, the files of tasks/,
// conversations/ and delegations/ with the sets hot paths look up, and the byte offsets of
// each entity's lines in events.jsonl and of each key in a notification inbox. Unfinished
// work is held parsed; finished work (done and cancelled tasks, ended and expired
// conversations, completed and failed delegations) only as what the sets need (parent,
// assignee, status, dependencies; the two sides, task, state), and is read from its file
// when asked for. runtime/journal/changes.log is its change journal: every entity write through
// aipm appends, under the store lock after the rename, the path it replaced and its
// directory's modification time in nanoseconds before and after the write
// ("tasks/tsk_….json<TAB>before<TAB>after"; agent files: the path alone); a reader
// re-checks exactly the paths appended since it last looked. A task, conversation or
// delegation write adds what it left: the file's inode, size, modification and change
// times, and the index keys of its content as a JSON array of strings
// ("…<TAB>after<TAB>ino<TAB>size<TAB>mtime<TAB>ctime<TAB>[keys]"). A reader whose stat of
// the file finds that identity takes the keys without reading the file, and reads it when
// its content is asked for; if the file has another identity, it is read at once. A
// journal over 16 MiB is started anew (a new file), and a reader that sees a new file
// re-checks every cached file by identity (inode, size, modification time). Changes that bypass the journal — editors,
// git — reach a process through its watcher (Store.Changed). A process without one (the
// command line) looks, on each query, at each directory's modification time — one the
// journal does not account for means a file was created, removed or renamed beside aipm,
// and the directory is compared file by file — and compares the files it holds parsed
// (unfinished work) by identity; a finished entity's file is compared when it is read.
// A finished task's file rewritten in place (no rename) while no process watched is
// therefore seen when that task is read, not by a listing by status.
//
// runtime/index/<dir>.idx (tasks, conversations, delegations) is that cache on disk, so
// that a process starts from it instead of reading every file, and holds only what it
// uses. Text lines first: a header line "aipm-index <format> <dir>", a line "journal
// <inode> <offset> dir <inode> <mtime>" saying where in the journal and at which
// directory identity it was true, a line "live <records> <bytes>" and that many records of
// the entities held in full (unfinished work) — id, inode, size, modification time, status
// change time, then "f", the number of index keys, the keys (escaped: \\, \t, \n) and the
// compact JSON, or "x" for a file that did not parse — then a line "cold <bytes>" and that
// many bytes of finished work (done, cancelled, ended, completed) as flat little-endian
// arrays (persist.go and cold.go give the layout): the ids sorted, each one's identity and
// index keys, and for each secondary index the ids filed under each key, in id order. A
// last line "end <crc32>" checks everything before it. A process reads the file but for
// the finished entities' identities (read from the file when one is compared with its
// own), parses the live records' keys (their JSON when first asked for) and queries the
// cold part where it lies: no map or object per finished entity, so starting costs what
// reading the bytes costs (about 10 of the file's 13 MB at 100,000 tasks). It then re-checks the paths the
// journal names after its offset, and compares the directory's modification time along
// the journal's; an index file of another format, whose checksum, record count or layout
// does not match (truncated, edited by hand), of another directory (a copied clone), or
// older than the journal's start, is not used: the directory is compared file by file and
// the file written anew. It is written (atomically, not fsynced) after such a comparison,
// and when a process has seen a thousand changes and the file lags the journal by more
// than 64 KiB; the process that wrote it then holds the file in place of the finished
// entities it held. One process writes it at a time: it holds runtime/index/<dir>.lock
// (flock, tried without waiting), and a process that finds it held leaves the save to the
// holder.
//
// runtime/index/tasks.seq is one line "seq1 <highest sequence number in tasks/> <inode of
// tasks/> <its modification time> <inode of the journal> <offset in it>", tab-separated,
// rewritten under the store lock by every mint of a task id. A process's first mint reads
// it and the journal lines after that offset (each write to tasks/ through aipm moves the
// directory's time from the one accounted for) instead of loading the tasks' index or
// listing tasks/, so that `aipm task add` costs the same at any project size. Another
// journal, more than a mebibyte of lines since, a directory time the lines do not account
// for (a file made beside aipm), or a line that does not parse, and it is not used.
//
// runtime/index/events.idx finds an entity's lines in events.jsonl: a header line
// "aipm-events-index <format> <inode of events.jsonl> <bytes covered> <entries> <crc32 of
// the 256 bytes before the end of what it covers>", the
// entries — a 64-bit FNV-1a hash of the line's entity id and the line's offset, 16 bytes
// little-endian, sorted — and a line "end <crc32>". A process checks it whole once, looks
// ids up in it where it lies, and indexes in memory only the lines appended after it
// covers; every line found is read and its id compared. Another inode of events.jsonl (a
// merge replaced it), a history shorter than it covers or whose bytes before that point
// differ, another format or a checksum that does not match, and it is not used: the history is indexed from the top and the file
// written anew, as it is after 4,096 new lines.
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
// executions/, leases/) name the merge driver `aipm merge-driver %O %A %B %P`, registered in each
// clone's Git config by `aipm init`; it runs Merge: field by field, a field changed on one
// side taken, one changed on both decided by a rule that keeps the entity valid (a task's
// status: reachable from the ancestor's by the transition table, the later
// status_changed_at winning), a conversation's turns the base plus both sides'
// increments, free text changed on both sides a conflict marked around those fields
// alone, version one more than both sides. Store reads report a file with conflict
// markers as an unresolved merge, and Check names the entity, the fields and both values.
//
// A merge of two valid sides can still break a rule that spans files (repair.go):
// Breaches finds an agent over max_parallel_tasks, a task in progress under a blocked
// ancestor, a live conversation at max_turns, two live conversations of one pair, a done
// task with an unfinished sub-task, and a dependency cycle. RepairMerged applies the
// rule's own repair to the first four under the store lock (the tasks started last
// blocked; the cascade of the ancestor's block; terminating with max_turns; the younger or
// pending duplicate ended with end_reason duplicate), each with a history event via
// "merge"; the last two have no safe repair, and Check names them with the fix. `aipm run`
// repairs on every look at the store, `aipm doctor --repair` by hand.
//
// In a clone with a remote, .ai-pm is instead a worktree of its own branch, aipm/state,
// which the code branches ignore; `aipm sync` merges another clone's changes path by path
// from Git's objects — entity files by merge.Merge, JSONL files by merge.Lines (each record once,
// in time order) — and writes the results through Files (Store.Exclusive): atomically,
// under the store lock, noted in the change journal like any write of the store's own.
//
// # A clone is untrusted input
//
// Everything committed under .ai-pm may come from a stranger, so the store never follows a
// link there (safepath.go): every open for reading, appending or replacing resolves
// through an os.Root of .ai-pm (openat beneath it: a directory swapped for a link cannot
// carry an access outside), checks with Lstat that each directory between .ai-pm and the
// file is a real directory, opens the file with O_NOFOLLOW and O_NONBLOCK, and refuses
// anything but a regular file — and a file written in place that has another hard link —
// with an UnsafePathError that names the path and says to remove it. The store lock is that
// lock file opened the same way and flocked by descriptor. A JSON entity over 4 MiB, a
// JSONL read over 256 MiB and a JSONL line over 1 MiB are refused (TooLargeError,
// LineTooLongError) instead of being read into memory; JSONL files are streamed.
// Check reports every link and special file. An agent file's hierarchy is checked: only
// project.json's owner (a human) is "owner"; another agent claiming it is treated as a
// worker (AI) or manager (human) and reported. settings.agent_commands run only with this
// machine's approval, kept outside the repository: a pulled change to a command, or to the
// repository file it runs, withdraws it until `aipm trust`.
package filestore
