package filestore

// UnwatchedDirs are the directories under .ai-pm, slash-separated, whose files change on
// every call or every write and that no reader waits on: a session's usage counts
// (runtime/usage), the persisted index files (IndexDir), the lock files (runtime/locks)
// and the temp files of atomic writes (runtime/tmp). A watcher leaves them out, so that
// thirty busy processes do not each wake for every other's bookkeeping.
var UnwatchedDirs = []string{"runtime/usage", IndexDir, "runtime/locks", "runtime/tmp"}
