package filestore

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// messageKeys are the keys of a mailbox line as aipm writes it (Message), each with
// whether its value is a time.
var messageKeys = map[string]bool{"id": false, "senderId": false, "receiverId": false, "content": false,
	"createdAt": true, "relatedTaskId": false, "conversationId": false}

// eventKeys are the keys of a history line as aipm writes most of them (Event, but for
// the lists of an edit's fields, which are decoded).
var eventKeys = map[string]bool{"at": true, "actor": false, "via": false, "entity": false, "id": false,
	"change": false, "from": false, "to": false, "reason": false, "conversation_id": false, "requester_id": false}

// quickMessage tells, without decoding it, that a mailbox line is one json.Unmarshal
// decodes into a Message without an error, and whether its id and sender are set. ok is
// false for anything but the shape aipm writes (quickObject), and the caller then
// decodes the line to learn what is wrong with it: doctor rejects exactly the lines the
// readers reject, at a fraction of the cost of decoding two million lines.
func quickMessage(line []byte) (id, sender, ok bool) {
	return quickObject(line, messageKeys, "id", "senderId")
}

// quickObject tells that line is one JSON object json.Unmarshal decodes without an
// error into the struct whose keys are keys (each with whether its value is a time), and
// whether the keys a and b have a value other than "" or null. ok is false for anything
// but one object of those keys, spelt exactly, each a string valid by the JSON grammar
// or null, a time one that time.Time's own UnmarshalJSON accepts, and nothing after it
// but blanks: another key (json.Unmarshal matches keys in any case), a number, a list.
func quickObject(line []byte, keys map[string]bool, a, b string) (aSet, bSet, ok bool) {
	return quickObjectValues(line, keys, a, b, nil)
}

// quickObjectValues is quickObject that also calls value, when not nil, with each key and
// its value, as the line holds it (a string with its quotes; nil for null), and, for a
// time, the time: values the caller keeps only once ok is true.
func quickObjectValues(line []byte, keys map[string]bool, a, b string, value func(key, raw []byte, t time.Time)) (aSet, bSet, ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false, false, false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return false, false, skipSpace(line, i+1) == len(line)
	}
	for {
		ks, ke, ok := quickString(line, i)
		if !ok {
			return false, false, false
		}
		key := string(line[ks+1 : ke-1])
		isTime, known := keys[key]
		if !known {
			return false, false, false // another key, or one spelt in another case
		}
		i = skipSpace(line, ke)
		if i >= len(line) || line[i] != ':' {
			return false, false, false
		}
		i = skipSpace(line, i+1)
		set := false
		switch {
		case i+4 <= len(line) && string(line[i:i+4]) == "null":
			i += 4
			if value != nil {
				value(line[ks+1:ke-1], nil, time.Time{})
			}
		default:
			vs, ve, ok := quickString(line, i)
			if !ok {
				return false, false, false
			}
			var t time.Time
			if isTime {
				if t.UnmarshalJSON(line[vs:ve]) != nil {
					return false, false, false
				}
			}
			if value != nil {
				value(line[ks+1:ke-1], line[vs:ve], t)
			}
			set, i = ve-vs > 2, ve
		}
		switch key { // the last of a key counts, as json.Unmarshal takes it
		case a:
			aSet = set
		case b:
			bSet = set
		}
		i = skipSpace(line, i)
		if i >= len(line) {
			return false, false, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return aSet, bSet, skipSpace(line, i+1) == len(line)
		default:
			return false, false, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// quickString returns the bounds of the JSON string at b[i] (quotes included), if one
// valid by the JSON grammar starts there: no control character unescaped, only the
// escapes JSON has. Invalid UTF-8 is allowed, as json.Unmarshal allows it.
func quickString(b []byte, i int) (start, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return i, j + 1, true
		case c < 0x20:
			return 0, 0, false
		case c == '\\':
			if j+1 >= len(b) {
				return 0, 0, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(b) {
					return 0, 0, false
				}
				for _, h := range b[j+2 : j+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, 0, false
					}
				}
				j += 5
			default:
				return 0, 0, false
			}
		}
	}
	return 0, 0, false
}

// QuickLineKey reads a JSONL line of one of the shapes aipm writes — a mailbox message
// (messageKeys) or a history event (eventKeys) — without decoding it, and returns what
// json.Unmarshal would find of its "id" and its time ("createdAt" or "at"): a merge of
// two million lines needs only those (merge.Tails). ok is false for any other line,
// which the caller decodes.
func QuickLineKey(line []byte) (id string, at time.Time, ok bool) {
	value := func(key, raw []byte, t time.Time) {
		if raw == nil {
			return // null leaves the field as it was, as json.Unmarshal does
		}
		switch string(key) {
		case "id":
			id = unquoteQuick(raw)
		case "createdAt", "at":
			at = t
		}
	}
	if _, _, ok = quickObjectValues(line, messageKeys, "", "", value); ok {
		return id, at, true
	}
	id, at = "", time.Time{}
	if _, _, ok = quickObjectValues(line, eventKeys, "", "", value); ok {
		return id, at, true
	}
	return "", time.Time{}, false
}

// unquoteQuick is the string a JSON string quickString vouched for holds (an escape or
// invalid UTF-8, which json.Unmarshal replaces, is left to it).
func unquoteQuick(raw []byte) string {
	if !bytes.ContainsRune(raw, '\\') && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}
