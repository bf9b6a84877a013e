package filestore

import (
	"encoding/json"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// Unfinished work — a task not done or cancelled, a conversation not ended or expired, a
// delegation not completed or failed — is what every process of a clone holds in memory
// (the rest is read where it lies: see doc.go), so its count is what a project's memory
// follows. These say what a file would add to it, and how much of it a store holds.

// Unfinished reports whether data, the file of an entity of kind (KindTask,
// KindConversation, KindDelegation), holds unfinished work; false for another kind or a
// file that does not decode.
func Unfinished(kind string, data []byte) bool {
	var v struct {
		Status string `json:"status"`
		State  string `json:"state"`
	}
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	switch kind {
	case KindTask:
		return !Finished(v.Status)
	case KindConversation:
		return !convStateFinished(v.State)
	case KindDelegation:
		return !dlgStatusFinished(v.Status)
	}
	return false
}

// UnfinishedCount is how many entities of kind (KindTask, KindConversation,
// KindDelegation) hold unfinished work in the store, counted from the index; 0 for
// another kind.
func (s *Store) UnfinishedCount(kind string) (int, error) {
	switch kind {
	case KindTask:
		return unfinishedIn(s.tasks, ixStatus, Finished)
	case KindConversation:
		return unfinishedIn(s.convs, 2, convStateFinished) // by state (newConvCache)
	case KindDelegation:
		return unfinishedIn(s.dlgs, 2, dlgStatusFinished) // by status (newDlgCache)
	}
	return 0, nil
}

// unfinishedIn counts the entities of c whose key in index idx (a status or state) is
// not finished.
func unfinishedIn[T any](c *engine.Cache[T], idx int, finished func(string) bool) (int, error) {
	n := 0
	err := c.With(func() {
		for st, k := range c.CountsLocked(idx) {
			if !finished(st) {
				n += k
			}
		}
	})
	return n, err
}
