package filestore

import "time"

// messageKeys are the keys of a mailbox line as aipm writes it (Message), each with
// whether its value is a time.
var messageKeys = map[string]bool{"id": false, "senderId": false, "receiverId": false, "content": false,
	"createdAt": true, "relatedTaskId": false, "conversationId": false}

// quickMessage tells, without decoding it, that a mailbox line is one json.Unmarshal
// decodes into a Message without an error, and whether its id and sender are set. ok is
// false for anything but the shape aipm writes — one JSON object of Message's own keys
// (spelt exactly), each a string or null, a time one that time.Time accepts — and the
// caller then decodes the line to learn what is wrong with it: doctor rejects exactly the
// lines the readers reject, at a fraction of the cost of decoding two million lines.
func quickMessage(line []byte) (id, sender, ok bool) {
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
		isTime, known := messageKeys[string(line[ks+1:ke-1])]
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
		default:
			vs, ve, ok := quickString(line, i)
			if !ok {
				return false, false, false
			}
			if isTime {
				var t time.Time
				if t.UnmarshalJSON(line[vs:ve]) != nil {
					return false, false, false
				}
			}
			set, i = ve-vs > 2, ve
		}
		switch string(line[ks+1 : ke-1]) { // the last of a key counts, as json.Unmarshal takes it
		case "id":
			id = set
		case "senderId":
			sender = set
		}
		i = skipSpace(line, i)
		if i >= len(line) {
			return false, false, false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return id, sender, skipSpace(line, i+1) == len(line)
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
