package filestore

import "encoding/json"

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
	n := 0
	var err error
	switch kind {
	case KindTask:
		err = s.tasks.With(func() {
			for st, k := range s.tasks.CountsLocked(ixStatus) {
				if !Finished(st) {
					n += k
				}
			}
		})
	case KindConversation:
		err = s.convs.With(func() {
			for st, k := range s.convs.CountsLocked(2) {
				if !convStateFinished(st) {
					n += k
				}
			}
		})
	case KindDelegation:
		err = s.dlgs.With(func() {
			for st, k := range s.dlgs.CountsLocked(2) {
				if !dlgStatusFinished(st) {
					n += k
				}
			}
		})
	}
	return n, err
}
