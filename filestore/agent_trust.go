package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore/internal/engine"
)

// An agent is a standing order to run a program on whichever machine holds its lease:
// whoever can push to the state branch can add one, or point one at another ai_type, and
// the next `aipm run` of every teammate would start it with that teammate's credentials.
// So an agent that another clone brought, new or with its run-relevant fields changed,
// waits for this machine's yes, as a pulled agent command does (trust.go):
//
//   - Its fingerprint is what decides what runs for it and what it is told: its type, its
//     ai_type (which names the command of settings.agent_commands, approved on its own),
//     its model (a word of that command), its role (in the prompt it starts with) and its
//     system prompt (in the answer to its authenticate). Its name, parent or status
//     change nothing of what runs. Approvals recorded before role and system prompt
//     counted (fingerprint version 1) still stand while the fields they covered match.
//   - agents.json in the machine directory (machine_trust.go: outside the repository, never
//     synced) holds, per agent, the fingerprint approved here and, for one that arrived
//     from another clone with a fingerprint not approved here, where it came from: the
//     commit and its author and committer.
//   - An agent is held while such an arrival is recorded and its fingerprint is not the
//     approved one: `aipm run` neither takes its lease nor starts it, and `aipm trust`
//     shows it and approves it.
//
// The arrival is recorded by the sync's merge (Files.Replace) before the agent's file is
// written, under the store lock, so no coordinator ever sees the file without it. An
// agent created here (AddAgent) or present before another clone changed it is this
// machine's own: it needs no approval, and a merge that leaves its fingerprint as it was
// holds nothing.

// AgentOrigin is where an agent's file came from: the commit of the state branch that last
// changed it, and that commit's author and committer ("Name <email>").
type AgentOrigin struct {
	Commit    string `json:"commit,omitempty"`
	Author    string `json:"author,omitempty"`
	Committer string `json:"committer,omitempty"`
}

// HeldAgent is an agent another clone brought that this machine has not approved.
type HeldAgent struct {
	AgentID string `json:"agent_id"`
	// Type, AIType and Model are the run-relevant fields as they arrived; Fingerprint
	// their hash (AgentFingerprint).
	Type   string `json:"type"`
	AIType string `json:"ai_type"`
	Model  string `json:"model,omitempty"`
	// Role and SystemPrompt are what the agent is told as they arrived.
	Role         string `json:"role,omitempty"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	Fingerprint  string `json:"fingerprint"`
	AgentOrigin
	ArrivedAt time.Time `json:"arrived_at"`
	// New is true when this clone had no such agent before it arrived; Was is the
	// approved ai_type (and model, role, system prompt) it had here otherwise.
	New bool   `json:"new"`
	Was string `json:"was,omitempty"`
}

type agentTrustFile struct {
	Approved map[string]approvedAgent `json:"approved"` // by agent id
	Arrived  map[string]HeldAgent     `json:"arrived"`  // by agent id
}

type approvedAgent struct {
	Fingerprint string    `json:"fingerprint"`
	Runs        string    `json:"runs"` // the ai_type and model, for people reading it
	ApprovedAt  time.Time `json:"approved_at"`
}

// AgentFingerprint is the hash of what decides what runs for an agent and what it is
// told: its type, its ai_type (the default, claude, when none is set), its model, its
// role and its system prompt, marked with its version (fingerprintV2).
func AgentFingerprint(a *Agent) string {
	data, _ := json.Marshal([]string{a.Type, effectiveAIType(a), a.Model, a.Role, a.SystemPrompt})
	sum := sha256.Sum256(data)
	return fingerprintV2 + hex.EncodeToString(sum[:])
}

// fingerprintV2 marks the fingerprints that cover the role and the system prompt; one
// without it is of version 1 (agentFingerprintV1), recorded before they counted.
const fingerprintV2 = "v2:"

// agentFingerprintV1 is the fingerprint approvals were recorded with before the role
// and the system prompt counted: type, ai_type and model only.
func agentFingerprintV1(a *Agent) string {
	data, _ := json.Marshal([]string{a.Type, effectiveAIType(a), a.Model})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// approves reports whether the approval on record covers a as it is now: its fingerprint,
// or a version-1 fingerprint of the fields that version covered (so that an upgrade holds
// no agent approved before it; noteArrival records the new version when the agent next
// arrives).
func (ap approvedAgent) approves(a *Agent) bool {
	if ap.Fingerprint == AgentFingerprint(a) {
		return true
	}
	return !strings.HasPrefix(ap.Fingerprint, fingerprintV2) && ap.Fingerprint == agentFingerprintV1(a)
}

// effectiveAIType is the ai_type whose command runs an agent: claude when none is set.
func effectiveAIType(a *Agent) string {
	if a.AIType == "" {
		return "claude"
	}
	return a.AIType
}

// runs says what an agent runs as and is told, in words: its ai_type, model, role and
// system prompt (the last two clipped).
func runs(a *Agent) string {
	s := "ai_type " + effectiveAIType(a)
	if a.Model != "" {
		s += ", model " + a.Model
	}
	if a.Role != "" {
		s += fmt.Sprintf(", role %q", clip(a.Role))
	}
	if a.SystemPrompt != "" {
		s += fmt.Sprintf(", system prompt %q", clip(a.SystemPrompt))
	}
	return s
}

// Runs says what the held agent runs as and is told, as it arrived: its ai_type, model,
// role and system prompt.
func (h *HeldAgent) Runs() string {
	return runs(&Agent{Type: h.Type, AIType: h.AIType, Model: h.Model, Role: h.Role, SystemPrompt: h.SystemPrompt})
}

func (s *Store) agentTrustPath() (string, error) { return s.machinePath("agents.json") }

func (s *Store) readAgentTrust() (*agentTrustFile, error) {
	var t agentTrustFile
	path, err := s.agentTrustPath()
	if err != nil {
		return nil, err
	}
	if err := s.readJSON(path, &t); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if t.Approved == nil {
		t.Approved = map[string]approvedAgent{}
	}
	if t.Arrived == nil {
		t.Arrived = map[string]HeldAgent{}
	}
	return &t, nil
}

func (s *Store) writeAgentTrust(t *agentTrustFile) error {
	path, err := s.agentTrustPath()
	if err != nil {
		return err
	}
	return engine.WriteJSON(path, t, 0o600)
}

// held is the arrival that holds a, nil when a is not held.
func (t *agentTrustFile) held(a *Agent) *HeldAgent {
	if a.Type != AgentAI {
		return nil
	}
	h, ok := t.Arrived[a.ID]
	if !ok {
		return nil
	}
	if ap, ok := t.Approved[a.ID]; ok && ap.approves(a) {
		return nil
	}
	// What the record shows is what the agent is now (a later hand edit may have
	// changed it again); where it came from is the last arrival's.
	h.Type, h.AIType, h.Model, h.Role, h.SystemPrompt, h.Fingerprint = a.Type, effectiveAIType(a), a.Model, a.Role, a.SystemPrompt, AgentFingerprint(a)
	return &h
}

// HeldAgents returns, by agent id, the AI agents that arrived from another clone with
// run-relevant fields this machine has not approved: `aipm run` starts none of them until
// `aipm trust` approves them.
func (s *Store) HeldAgents() (map[string]*HeldAgent, error) {
	t, err := s.readAgentTrust()
	if err != nil {
		return nil, err
	}
	out := map[string]*HeldAgent{}
	if len(t.Arrived) == 0 {
		return out, nil
	}
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		if h := t.held(a); h != nil {
			out[a.ID] = h
		}
	}
	return out, nil
}

// ApproveAgents approves on this machine the held agents named by ids (all of them when
// ids is empty), as they are now. It returns the ids it approved, sorted; an id that names
// no held agent is an error that says so.
func (s *Store) ApproveAgents(ids []string) ([]string, error) {
	var approved []string
	err := s.locked(func() error {
		t, err := s.readAgentTrust()
		if err != nil {
			return err
		}
		agents, err := s.Agents()
		if err != nil {
			return err
		}
		held := map[string]*Agent{}
		for _, a := range agents {
			if t.held(a) != nil {
				held[a.ID] = a
			}
		}
		if len(ids) == 0 {
			for id := range held {
				ids = append(ids, id)
			}
		}
		for _, id := range ids {
			a, ok := held[id]
			if !ok {
				return newErr(ErrInvalid, "agent_not_held", "`aipm trust --check` lists the agents waiting for an approval",
					"agent %s waits for no approval on this machine", clip(id))
			}
			t.Approved[id] = approvedAgent{Fingerprint: AgentFingerprint(a), Runs: runs(a), ApprovedAt: s.Now()}
			delete(t.Arrived, id)
			approved = append(approved, id)
		}
		if len(approved) == 0 {
			return nil
		}
		return s.writeAgentTrust(t)
	})
	slices.Sort(approved)
	return approved, err
}

// approveCreated makes an agent created on this machine its own: any arrival recorded
// for an earlier agent of that id is forgotten. The caller holds the store lock.
func (s *Store) approveCreated(a *Agent) error {
	t, err := s.readAgentTrust()
	if err != nil {
		return err
	}
	if _, ok := t.Arrived[a.ID]; !ok {
		return nil // nothing to forget: an agent made here is held by nothing
	}
	delete(t.Arrived, a.ID)
	t.Approved[a.ID] = approvedAgent{Fingerprint: AgentFingerprint(a), Runs: runs(a), ApprovedAt: s.Now()}
	return s.writeAgentTrust(t)
}

// agentFileID returns the agent id of agents/<id>/agent.json, "" for any other path.
func agentFileID(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) == 3 && parts[0] == "agents" && parts[2] == "agent.json" && ValidateAgentID(parts[1]) == nil {
		return parts[1]
	}
	return ""
}

// noteArrival records, before another clone's version data of agents/<id>/agent.json
// replaces this clone's, that the agent waits for an approval here when what runs for it
// changes: it is new here, or its fingerprint is neither the one it had (unless that one
// was itself held) nor the one approved. The caller holds the store lock.
func (f *Files) noteArrival(id string, data []byte) error {
	var in Agent
	if json.Unmarshal(data, &in) != nil || in.Type != AgentAI {
		// Not an AI agent (or conflict markers, which no reader takes): nothing runs.
		return nil
	}
	in.ID = id
	s := f.s
	t, err := s.readAgentTrust()
	if err != nil {
		return err
	}
	fp := AgentFingerprint(&in)
	// Only this version's fingerprint counts here: a version-1 record would let a new
	// role or system prompt through; the agent as it is here decides below.
	if ap, ok := t.Approved[id]; ok && ap.Fingerprint == fp {
		if _, ok := t.Arrived[id]; ok {
			delete(t.Arrived, id) // back to what this machine approved
			return s.writeAgentTrust(t)
		}
		return nil
	}
	h := HeldAgent{AgentID: id, Type: in.Type, AIType: effectiveAIType(&in), Model: in.Model, Role: in.Role, SystemPrompt: in.SystemPrompt,
		Fingerprint: fp, ArrivedAt: s.Now(), New: true}
	var cur Agent
	if err := s.readJSON(s.agentPath(id), &cur); err == nil {
		cur.ID = id
		if t.held(&cur) == nil {
			if cur.Type == AgentAI && AgentFingerprint(&cur) == fp {
				// What runs for it is what ran here. An approval recorded under a
				// version-1 fingerprint is brought to this version, and an arrival
				// recorded before, which no longer holds it, is done with.
				ap, ok := t.Approved[id]
				_, stale := t.Arrived[id]
				if !stale && (!ok || ap.Fingerprint == fp) {
					return nil
				}
				delete(t.Arrived, id)
				if ok {
					t.Approved[id] = approvedAgent{Fingerprint: fp, Runs: runs(&cur), ApprovedAt: ap.ApprovedAt}
				}
				return s.writeAgentTrust(t)
			}
			// What it was here is what this machine ran: its approval stays on record,
			// so an arrival that brings it back holds nothing.
			t.Approved[id] = approvedAgent{Fingerprint: AgentFingerprint(&cur), Runs: runs(&cur), ApprovedAt: s.Now()}
			h.New = false
			h.Was = runs(&cur)
			if cur.Type != AgentAI {
				h.Was = "a " + cur.Type + " agent"
			}
		} else if prev, ok := t.Arrived[id]; ok {
			h.New, h.Was = prev.New, prev.Was
		}
	}
	if f.Origin != nil {
		h.AgentOrigin = f.Origin("agents/" + id + "/agent.json")
	}
	t.Arrived[id] = h
	return s.writeAgentTrust(t)
}
