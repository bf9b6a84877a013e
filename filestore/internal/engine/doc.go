// Package engine is the store's files, beneath its rules: it knows files, bytes and
// processes, not tasks. Package filestore holds the entities and the rules that protect
// them, and calls the engine for every file-system operation; nothing above filestore
// reaches the engine (it is internal), and the engine imports nothing of aipm.
//
// What it offers, by file:
//
//   - dir.go: Dir, one store directory (.ai-pm): its paths, the store lock, and the
//     routing of the watcher's reports and the journal's lines to the caches.
//   - safepath.go, fsops.go: opening, reading, listing, removing and renaming under a
//     store without following a link on the way (everything under .ai-pm may come from a
//     stranger's commit), with size limits by kind of file.
//   - atomic.go, jsonl.go: replacing a file atomically and durably; appending a JSONL
//     line and repairing a torn tail; reading JSONL with bounded memory.
//   - journal.go: the change journal every write through aipm appends to, and its reader.
//   - cache.go, persist.go, cold.go, query.go, ids.go: the cache of one entity directory
//     (tasks/, conversations/, ...): every file parsed once and re-read only when the
//     journal or the watcher says it may have changed; its secondary indexes; the index
//     file that lets the next process start from it; queries over it.
//   - lock_*.go, process_*.go, ctime_*.go, dirid_*.go, owner_*.go, renameat_*.go: what
//     each platform provides for the above.
//
// Guarantees:
//
//   - Atomic: a file written with WriteAtomic, WriteJSON or WriteEntity is replaced by a
//     rename: a reader sees the old content or the new, never a mix, and needs no lock.
//     ReplaceQuick and WriteStreamed are atomic too, not durable.
//   - Durable when the call returns: WriteAtomic and its kin (the temp file and the
//     directory are fsynced); AppendLine when asked to be (durable true); CreateOnce. The
//     index files and caches (WriteCache, WriteStreamed, WriteIndexFile's saves) are not:
//     each carries a check (a checksum, a format line) and a lost or cut one costs a
//     rebuild from the files, never a wrong answer.
//   - Ordered: a read-modify-write runs under Dir.Locked, an in-process mutex plus an
//     flock on runtime/locks/store.lock shared by every process of the store. AppendLine
//     expects it held, so no two appends interleave.
//   - What a reader may see: a JSONL file's last line may be torn (a writer died
//     mid-write); ScanLines neither passes nor skips it. A cache answers from what the
//     journal and the watcher reported: a write through aipm by any process is seen by
//     the next query (under the lock, exactly); an edit beside aipm is seen once the
//     watcher reports it, or, in a process without one, at the next query's comparison of
//     the directory with the cache.
//   - Nothing under .ai-pm is followed through a link, opened if it is not a regular
//     file, written through a hard link, or read whole past its kind's size limit.
package engine
