package coordinator

import (
	"testing"
	"time"

	"github.com/aipm/aipm/filestore"
)

// TestSilenceStep: a working process is asked after the silence timeout, stopped after the
// grace that follows the question, and any sign of life after the question answers it.
func TestSilenceStep(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	def := filestore.Settings{}
	short := filestore.Settings{SilenceTimeoutSeconds: 3, SilenceGraceSeconds: 2}
	cases := []struct {
		name      string
		set       filestore.Settings
		now, last time.Time
		asked     time.Time
		act       int
		at        time.Time
	}{
		{"default: active 2 minutes ago, look at 3 minutes", def, at(120), at(0), time.Time{}, silenceWait, at(180)},
		{"default: silent 3 minutes, ask", def, at(180), at(0), time.Time{}, silenceAsk, at(300)},
		{"default: asked, silent 1 more minute, wait for the grace", def, at(240), at(0), at(180), silenceWait, at(300)},
		{"default: asked, silent 2 more minutes, stop", def, at(300), at(0), at(180), silenceStop, time.Time{}},
		{"default: asked, then a tool call: answered", def, at(250), at(200), at(180), silenceAnswered, at(380)},
		{"short: silent 2s, wait", short, at(2), at(0), time.Time{}, silenceWait, at(3)},
		{"short: silent 3s, ask", short, at(3), at(0), time.Time{}, silenceAsk, at(5)},
		{"short: asked 2s ago, stop", short, at(5), at(0), at(3), silenceStop, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := silenceStep(tc.set, tc.now, tc.last, tc.asked)
			if d.act != tc.act || !d.at.Equal(tc.at) {
				t.Errorf("silenceStep = {act %d, at %v}, want {act %d, at %v}", d.act, d.at, tc.act, tc.at)
			}
		})
	}
}

// TestSilenceDefaults: the defaults find a stuck agent in minutes.
func TestSilenceDefaults(t *testing.T) {
	var s filestore.Settings
	if got := s.SilenceTimeout(); got != 3*time.Minute {
		t.Errorf("SilenceTimeout() = %v, want 3m", got)
	}
	if got := s.SilenceGrace(); got != 2*time.Minute {
		t.Errorf("SilenceGrace() = %v, want 2m", got)
	}
	if got := s.FailedStarts(); got != 5 {
		t.Errorf("FailedStarts() = %d, want 5", got)
	}
}

// TestBackoffDelay: the wait doubles per failure from the base, is never shorter than the
// time the failed start held its slot, and never longer than maxBackoff.
func TestBackoffDelay(t *testing.T) {
	cases := []struct {
		base  time.Duration
		fails int
		held  time.Duration
		want  time.Duration
	}{
		{time.Second, 1, 0, time.Second},
		{time.Second, 3, 0, 4 * time.Second},
		{300 * time.Millisecond, 2, 50 * time.Millisecond, 600 * time.Millisecond},
		// A command that hangs until the 120 s start timeout waits at least as long.
		{time.Second, 1, 120*time.Second + 30*time.Millisecond, 120*time.Second + 100*time.Millisecond},
		{100 * time.Millisecond, 1, 1050 * time.Millisecond, 1100 * time.Millisecond},
		{time.Second, 30, 0, maxBackoff},
		{time.Second, 1, time.Hour, maxBackoff},
	}
	for _, tc := range cases {
		if got := backoffDelay(tc.base, tc.fails, tc.held); got != tc.want {
			t.Errorf("backoffDelay(%v, %d, %v) = %v, want %v", tc.base, tc.fails, tc.held, got, tc.want)
		}
	}
}

// TestHealthyFirst: work whose last start failed is offered a slot after the others, in
// their order otherwise.
func TestHealthyFirst(t *testing.T) {
	c := &Coordinator{broken: map[workKey]int{{"a", filestore.PurposeChat}: 2, {"c", filestore.PurposeTask}: 1}}
	ais := []*filestore.Agent{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}
	ids := func(as []*filestore.Agent) string {
		var out string
		for _, a := range as {
			out += a.ID
		}
		return out
	}
	if got := ids(c.healthyFirst(ais, filestore.PurposeChat)); got != "bcda" {
		t.Errorf("chat order %s, want bcda", got)
	}
	if got := ids(c.healthyFirst(ais, filestore.PurposeTask)); got != "abdc" {
		t.Errorf("task order %s, want abdc", got)
	}
	if got := ids(ais); got != "abcd" {
		t.Errorf("the list itself was reordered: %s", got)
	}
}
