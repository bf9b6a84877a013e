package filestore

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"
)

// ID prefixes of generated identifiers. Generated IDs are the prefix, an underscore, and 26
// lower-case Crockford base32 characters: 10 for the millisecond time, 16 random. They sort
// by creation time, and two clones or machines cannot produce the same one.
const (
	PrefixTask         = "tsk"
	PrefixSession      = "ses"
	PrefixEvent        = "evt"
	PrefixExecution    = "exe"
	PrefixMessage      = "msg"
	PrefixConversation = "cnv"
	PrefixDelegation   = "dlg"
	PrefixNotification = "ntf"
	PrefixProject      = "prj"
	PrefixSpawn        = "spn"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

var idMu sync.Mutex
var lastIDTime int64
var lastIDRand [10]byte

// NewID returns a fresh time-sortable identifier with the given prefix. Within one process,
// IDs made in the same millisecond still sort in creation order (the random part is
// incremented, as in ULID's monotonic mode).
func NewID(prefix string, now time.Time) string {
	ms := now.UnixMilli()
	idMu.Lock()
	var r [10]byte
	if ms <= lastIDTime {
		ms = lastIDTime
		r = lastIDRand
		for i := len(r) - 1; i >= 0; i-- {
			r[i]++
			if r[i] != 0 {
				break
			}
		}
	} else if _, err := rand.Read(r[:]); err != nil {
		panic("filestore: crypto/rand failed: " + err.Error()) // never happens on supported systems
	}
	lastIDTime, lastIDRand = ms, r
	idMu.Unlock()

	var b strings.Builder
	b.Grow(len(prefix) + 27)
	b.WriteString(prefix)
	b.WriteByte('_')
	for i := 9; i >= 0; i-- {
		b.WriteByte(crockford[(ms>>(uint(i)*5))&31])
	}
	// 80 random bits as 16 base32 digits.
	var acc uint64
	bits := 0
	for _, c := range r {
		acc = acc<<8 | uint64(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			b.WriteByte(crockford[(acc>>uint(bits))&31])
		}
	}
	return b.String()
}

// validName reports whether s is a name in the agent-ID alphabet: a lower-case letter or
// digit, then up to 62 of those, '.', '_' or '-'. Written out rather than as a regular
// expression: every path built from an id checks it, thousands of times a second.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// validEntityID reports whether id is three lower-case letters, an underscore and a name.
func validEntityID(id string) bool {
	if len(id) < 5 || id[3] != '_' {
		return false
	}
	for i := range 3 {
		if id[i] < 'a' || id[i] > 'z' {
			return false
		}
	}
	return validName(id[4:])
}

// ValidateAgentID checks a user-chosen agent identifier: lower-case letters, digits, '.', '_'
// and '-', starting with a letter or digit, at most 63 characters. Such an ID can never name
// a parent directory or contain a path separator.
func ValidateAgentID(id string) error {
	if !validName(id) {
		return newErr(ErrInvalid, "invalid_id", "use lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, at most 63 characters (e.g. worker-frontend-01)",
			"invalid agent id %q", clip(id))
	}
	return nil
}

// ValidateEntityID checks the identifier of a stored entity: its prefix (e.g. "tsk"), an
// underscore and a name in the agent-ID alphabet. Every identifier is checked before it is
// used to build a path.
func ValidateEntityID(prefix, id string) error {
	if !validEntityID(id) || !strings.HasPrefix(id, prefix+"_") {
		return newErr(ErrInvalid, "invalid_id", "identifiers look like "+prefix+"_01jd2x0k8m3q7v5w9z1b4c6e8f",
			"invalid %s id %q", entityNoun(prefix), clip(id))
	}
	return nil
}

func entityNoun(prefix string) string {
	switch prefix {
	case PrefixTask:
		return "task"
	case PrefixSession:
		return "session"
	case PrefixExecution:
		return "execution"
	case PrefixConversation:
		return "conversation"
	case PrefixDelegation:
		return "delegation"
	case PrefixNotification:
		return "notification"
	case PrefixMessage:
		return "message"
	case PrefixSpawn:
		return "spawn"
	}
	return prefix
}

// clip shortens hostile input before it is echoed back in an error message.
func clip(s string) string {
	const max = 80
	if len([]rune(s)) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "…"
}

// isEntityID is ValidateEntityID as a test, for the caches of the entity directories.
func isEntityID(prefix string) func(id string) bool {
	return func(id string) bool { return validEntityID(id) && strings.HasPrefix(id, prefix+"_") }
}

// isAgentID is ValidateAgentID as a test, for the cache of agents/.
func isAgentID(id string) bool { return validName(id) }
