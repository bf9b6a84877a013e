// Package msg is the catalog of aipm's agent-facing texts: the instructions of tool results,
// the sentences of notifications and of the response envelope, and the hints of errors. Each
// text has an English version (the default, and what the scenarios match byte for byte) and
// a Japanese one, used when project.json sets settings.language to "ja". Where the user's
// seed documents give a text in Japanese, the Japanese here is that text word for word.
//
// Texts are looked up by a stable key (Text). Error hints are written in English where the
// error is made — filestore knows nothing of languages — and are translated on their way to
// the agent by their English (Hint), so one table serves every place an error comes from.
//
// The package imports nothing of aipm and lives under filestore because the store itself
// writes some of these texts: a notification is recorded worded in its recipient's language,
// so that a human reading an inbox file reads sentences, not codes. Both filestore and the
// floors above it (tools, cmd) import it; it imports none of them.
package msg

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Japanese is the settings.language value that selects the Japanese texts.
const Japanese = "ja"

// text is one catalog entry. Both are fmt formats taking the same arguments; the Japanese
// may reorder them with explicit indexes (%[2]s), and a Japanese text the seeds give word
// for word may leave some out.
type text struct{ en, ja string }

// Text is the text of key in lang (English unless lang is "ja"), formatted with args. An
// unknown key yields the key itself, which a test keeps from happening.
func Text(lang, key string, args ...any) string {
	t, ok := texts[key]
	if !ok {
		return key
	}
	format := t.en
	if lang == Japanese && t.ja != "" {
		format = t.ja
	}
	return format1(format, args)
}

// format1 formats like fmt.Sprintf, except that a format without verbs is returned as is:
// a Japanese text given word for word by the seeds may use none of the English's arguments.
func format1(format string, args []any) string {
	if len(args) == 0 || !strings.Contains(format, "%") {
		return format
	}
	return fmt.Sprintf(format, args...)
}

// Hint is the hint of an error with the given code in lang. Hints are made in English
// (filestore's errors, the tools' own); for lang "ja" the catalog's Japanese replaces one
// whose English it knows — entries for the same code are tried first, and the parts of a
// hint made from values (ids, lists) carry over, themselves translated when they are hints
// (a hint built around another). Any other hint, and every hint in English, is returned
// unchanged.
func Hint(lang, code, english string) string {
	if lang != Japanese || english == "" {
		return english
	}
	if ja, ok := translate(hintTable(), code, english); ok {
		return ja
	}
	return english
}

// Message is the message of an error with the given code in lang: English unless lang is
// "ja" and the message is one the seeds give in Japanese (the others name ids and states,
// and stay as they are).
func Message(lang, code, english string) string {
	if lang != Japanese || english == "" {
		return english
	}
	if ja, ok := translate(messageTable(), code, english); ok {
		return ja
	}
	return english
}

// pattern is a translation of texts made from an English format: the format with each %s
// as a capture, and the Japanese format that takes the captures in order.
type pattern struct {
	code     string
	en, ja   string
	re       *regexp.Regexp // nil for a format without verbs (matched exactly)
	literals int            // how much of en is fixed text: the more, the more specific
}

type table struct {
	exact    map[string][]pattern // by English, for formats without verbs
	patterns []pattern            // the rest, most specific first
}

var (
	hintOnce, messageOnce sync.Once
	hintTab, messageTab   *table
)

func hintTable() *table {
	hintOnce.Do(func() { hintTab = compile(hints) })
	return hintTab
}

func messageTable() *table {
	messageOnce.Do(func() { messageTab = compile(messages) })
	return messageTab
}

// compile indexes translations whose English formats use only %s.
func compile(entries []translation) *table {
	t := &table{exact: map[string][]pattern{}}
	for _, e := range entries {
		p := pattern{code: e.code, en: e.en, ja: e.ja}
		parts := strings.Split(e.en, "%s")
		if len(parts) == 1 {
			t.exact[e.en] = append(t.exact[e.en], p)
			continue
		}
		var re strings.Builder
		re.WriteString(`(?s)^`)
		for i, part := range parts {
			if i > 0 {
				re.WriteString(`(.+?)`)
			}
			re.WriteString(regexp.QuoteMeta(part))
			p.literals += len(part)
		}
		re.WriteString(`$`)
		p.re = regexp.MustCompile(re.String())
		t.patterns = append(t.patterns, p)
	}
	sort.SliceStable(t.patterns, func(i, j int) bool { return t.patterns[i].literals > t.patterns[j].literals })
	return t
}

// translate finds the Japanese of english: an exact entry, else the most specific format
// that matches, preferring entries of code.
func translate(t *table, code, english string) (string, bool) {
	if ps := t.exact[english]; len(ps) > 0 {
		for _, p := range ps {
			if p.code == code {
				return p.ja, true
			}
		}
		return ps[0].ja, true
	}
	var found *pattern
	var args []string
	for i := range t.patterns {
		p := &t.patterns[i]
		m := p.re.FindStringSubmatch(english)
		if m == nil {
			continue
		}
		if found == nil || (p.code == code && found.code != code) {
			found, args = p, m[1:]
		}
		if p.code == code {
			break
		}
	}
	if found == nil {
		return "", false
	}
	vals := make([]any, len(args))
	for i, a := range args {
		// A part that is itself a known text is translated too ("it is over; <hint> if
		// there is more to say"); ids and lists match nothing and stay as they are.
		if ja, ok := translate(t, code, a); ok {
			vals[i] = ja
		} else {
			vals[i] = a
		}
	}
	return format1(found.ja, vals), true
}

// translation is the Japanese of an English text made elsewhere, for errors of code (empty:
// any code). en may hold %s where values go; ja takes them in the same order, or names
// them with explicit indexes.
type translation struct {
	code, en, ja string
}
