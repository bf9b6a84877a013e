package filestore

// UnwatchedDirs are the directories under .ai-pm, slash-separated, whose files change on
// every call or every write and that no reader waits on: a session's usage counts
// (runtime/usage), the persisted index files (IndexDir), the lock files (runtime/locks),
// the temp files of atomic writes (runtime/tmp) and the change journal with the delivery
// record (JournalDir). A watcher leaves them out, so that thirty busy processes do not
// each wake for every other's bookkeeping: the kernel queues an event for every watching
// process at each write into a watched directory, and wakes each of them for it.
var UnwatchedDirs = []string{"runtime/usage", IndexDir, "runtime/locks", "runtime/tmp", JournalDir}
