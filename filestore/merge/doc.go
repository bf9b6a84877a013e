// Package merge holds the rules by which two clones' versions of the store's files
// become one: the three-way merge of an entity file field by field (Merge), the union of
// a JSONL log's lines (Lines), the check of an entity another clone sent (CheckEntity),
// and the settling of a conflict a person decides (ResolveConflict). Git's merge driver
// (`aipm merge-driver`), `aipm resolve` and the sync rounds of the state branch call it.
//
// Why a package of its own: these rules change together, when an entity gains a field
// or a state, and with nothing else; they read the entities' types and their transition
// tables from filestore and never write a file, so they sit above the domain, which
// never calls them. What a conflicted file looks like (Git's markers, the fields both
// sides changed) is filestore's, since `aipm doctor` reads it; the repairs of rules a
// merge may have broken (filestore.RepairMerged) run under the store lock on the whole
// project and stay with the rules they repair.
package merge
