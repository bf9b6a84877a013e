package filestore

import (
	"encoding/json"
	"testing"
	"time"
)

var quickMessageSeeds = []string{
	`{"id":"msg_1","senderId":"w1","content":"hi","createdAt":"2026-08-30T10:00:48.733265Z"}`,
	`{"id":"msg_1","senderId":"w1","receiverId":"owner","content":"a \"quoted\" \\ \u00e9 \n","createdAt":"2026-08-30T10:00:48Z","relatedTaskId":"tsk_1","conversationId":"cnv_1"}`,
	` { "id" : "msg_1" , "senderId" : "w1" } `,
	`{"id":"","senderId":"w1"}`,
	`{"id":null,"senderId":"w1"}`,
	`{"id":"msg_1","id":"","senderId":"w1"}`,
	`{"ID":"msg_1","senderId":"w1"}`,
	`{"id":"msg_1","senderId":"w1","extra":1}`,
	`{"id":"msg_1","senderId":5}`,
	`{"id":"msg_1","senderId":"w1","createdAt":"yesterday"}`,
	`{"id":"msg_1","senderId":"w1","createdAt":null}`,
	`{"id":"msg_1","senderId":"w1"} x`,
	`{"id":"msg_1","senderId":"w1",}`,
	`{"id":"msg_1","senderId":"w\x01"}`,
	`{"id":"msg_1","senderId":"w\q"}`,
	`{"id":"msg_1","senderId":"\u00zz"}`,
	"{\"id\":\"msg_1\",\"senderId\":\"\xff\xfe\"}",
	`{}`,
	`null`,
	`[]`,
	`{"id":"msg_1","senderId":"w1"`,
	`{"at":"2026-11-28T10:00:46.328278Z","actor":"owner","via":"cli","entity":"project","id":"prj_1","change":"created","to":"scalebench"}`,
	`{"at":"2026-11-28T10:00:46Z","actor":"owner","via":"cli","entity":"task","id":"tsk_1","change":"updated","fields":["title"]}`,
	`{"at":5,"actor":"owner"}`,
}

// quickMessage never vouches for a line json.Unmarshal refuses, and says what it would
// find of the id and the sender; it vouches for the lines aipm writes. The same for a
// history line (quickObject with eventKeys).
func FuzzQuickMessage(f *testing.F) {
	for _, s := range quickMessageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if _, _, ok := quickObject(line, eventKeys, "", ""); ok {
			var e Event
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("quickObject vouched for the event %q, which json.Unmarshal refuses: %v", line, err)
			}
		}
		id, sender, ok := quickMessage(line)
		if !ok {
			return
		}
		var m Message
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("quickMessage vouched for %q, which json.Unmarshal refuses: %v", line, err)
		}
		if id != (m.ID != "") || sender != (m.SenderID != "") {
			t.Fatalf("%q: quickMessage says id %v, sender %v; decoded %+v", line, id, sender, m)
		}
	})
}

func TestQuickMessageTakesWhatAipmWrites(t *testing.T) {
	for _, m := range []Message{
		{ID: "msg_1", SenderID: "w1", Content: "hello <b>&</b> \"x\"\n\ttab \u2028 é", CreatedAt: time.Now().UTC()},
		{ID: "msg_2", SenderID: "w1", ReceiverID: "owner", Content: "", CreatedAt: time.Now().UTC(), RelatedTaskID: "tsk_1", ConversationID: "cnv_1"},
	} {
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if id, sender, ok := quickMessage(line); !ok || !id || !sender {
			t.Errorf("%s: quickMessage says id %v, sender %v, ok %v", line, id, sender, ok)
		}
	}
}

// QuickLineKey finds what json.Unmarshal finds of a line's id and time, for every line it
// vouches for; it vouches for the lines aipm writes.
func FuzzQuickLineKey(f *testing.F) {
	for _, s := range quickMessageSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"id":"msg_1","createdAt":"2026-08-30T10:00:48Z","createdAt":null}`))
	f.Add([]byte(`{"id":"msg_\"1\u00e9","id":null,"createdAt":"2026-08-30T10:00:48+09:00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		id, at, ok := QuickLineKey(line)
		if !ok {
			return
		}
		var v struct {
			ID        string    `json:"id"`
			CreatedAt time.Time `json:"createdAt"`
			At        time.Time `json:"at"`
		}
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("QuickLineKey vouched for %q, which json.Unmarshal refuses: %v", line, err)
		}
		want := v.CreatedAt
		if want.IsZero() {
			want = v.At
		}
		if id != v.ID || !at.Equal(want) {
			t.Fatalf("QuickLineKey(%q) = %q, %v; json.Unmarshal finds %q, %v", line, id, at, v.ID, want)
		}
	})
}

func TestQuickLineKeyReadsWhatAipmWrites(t *testing.T) {
	for _, line := range []string{quickMessageSeeds[0], quickMessageSeeds[1], quickMessageSeeds[21]} {
		if _, at, ok := QuickLineKey([]byte(line)); !ok || at.IsZero() {
			t.Errorf("QuickLineKey(%s): time %v, ok %v; want the line read", line, at, ok)
		}
	}
}
