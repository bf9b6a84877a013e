package filestore

import (
	"encoding/json"
	"time"
)

// Ways a change reaches the store, recorded in every history event.
const (
	ViaTool        = "tool"
	ViaCLI         = "cli"
	ViaFile        = "file"
	ViaCoordinator = "coordinator"
)

// Actor is who makes a change and through what: an agent's tool call, a human's CLI
// command, a hand edit, or the coordinator. Every change records the real actor.
type Actor struct {
	ID  string
	Via string
}

// Event is one line of .ai-pm/events.jsonl, the project's history.
type Event struct {
	At             time.Time `json:"at"`
	Actor          string    `json:"actor"`
	Via            string    `json:"via"`
	Entity         string    `json:"entity"`
	ID             string    `json:"id"`
	Change         string    `json:"change"`
	From           string    `json:"from,omitempty"`
	To             string    `json:"to,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	ConversationID string    `json:"conversation_id,omitempty"`
	RequesterID    string    `json:"requester_id,omitempty"`
	Fields         []string  `json:"fields,omitempty"`
}

// appendEvent records a history event. History is not fsynced line by line: the entity file
// it describes is already durable, and the event is written right after it under the same
// lock.
func (s *Store) appendEvent(e Event) error {
	return appendLine(s.path("events.jsonl"), e, false)
}

// Events returns history events for one entity id (all events if id is empty), oldest
// first. Undecodable lines are skipped; `aipm doctor` reports them.
func (s *Store) Events(id string) ([]Event, error) {
	lines, err := readLines(s.path("events.jsonl"), 0)
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, l := range lines {
		var e Event
		if json.Unmarshal(l.Data, &e) != nil {
			continue
		}
		if id == "" || e.ID == id {
			out = append(out, e)
		}
	}
	return out, nil
}
