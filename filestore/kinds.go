package filestore

import (
	"path"
	"strings"
)

// Entity kinds, named after what their files hold. The merge rules (package merge) know
// each of them.
const (
	KindTask         = "task"
	KindConversation = "conversation"
	KindDelegation   = "delegation"
	KindExecution    = "execution"
	KindAgent        = "agent"
	KindProject      = "project"
	KindLease        = "lease"
)

// EntityKind returns the kind of entity file a path under .ai-pm holds ("tasks/<id>.json"
// is a task; a leading ".ai-pm/" or any directories above it are allowed), or "" for a
// path that is not an entity file.
func EntityKind(p string) string {
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if i := strings.LastIndex(p, DirName+"/"); i >= 0 {
		p = p[i+len(DirName)+1:]
	}
	dir, file := path.Split(p)
	switch {
	case p == "project.json":
		return KindProject
	case dir == "tasks/" && strings.HasSuffix(file, ".json"):
		return KindTask
	case dir == "conversations/" && strings.HasSuffix(file, ".json"):
		return KindConversation
	case dir == "delegations/" && strings.HasSuffix(file, ".json"):
		return KindDelegation
	case dir == "executions/" && strings.HasSuffix(file, ".json"):
		return KindExecution
	case strings.HasPrefix(dir, "agents/") && strings.Count(dir, "/") == 2 && file == "agent.json":
		return KindAgent
	case dir == "leases/" && strings.HasSuffix(file, ".json"):
		return KindLease
	}
	return ""
}

// Reachable reports whether the transition table leads from one status to another in one
// or more steps.
func Reachable(from, to string) bool {
	seen := map[string]bool{from: true}
	next := []string{from}
	for len(next) > 0 {
		cur := next[0]
		next = next[1:]
		for _, s := range transitions[cur] {
			if s == to {
				return true
			}
			if !seen[s] {
				seen[s] = true
				next = append(next, s)
			}
		}
	}
	return false
}
