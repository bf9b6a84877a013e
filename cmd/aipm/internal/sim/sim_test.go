package sim

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSimParseLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want simDirective
	}{
		{"write seed.txt hello  world", true, simDirective{verb: "write", path: "seed.txt", text: "hello  world"}},
		{"- Write out/a.txt 42", true, simDirective{verb: "write", path: "out/a.txt", text: "42"}},
		{"  WRITE seed.txt random 1-1000", true, simDirective{verb: "write", path: "seed.txt", text: "random 1-1000", random: true, lo: 1, hi: 1000}},
		{"write seed.txt random -5--1", true, simDirective{verb: "write", path: "seed.txt", text: "random -5--1", random: true, lo: -5, hi: -1}},
		{"write seed.txt random 9-1", false, simDirective{}}, // lo > hi
		{"write tests", false, simDirective{}}, // no text: prose
		{"double seed.txt result.txt", true, simDirective{verb: "double", in: "seed.txt", out: "result.txt"}},
		{"Double check the results", false, simDirective{}}, // three arguments: prose
		{"sleep 20s", true, simDirective{verb: "sleep", dur: 20 * time.Second}},
		{"sleep well", false, simDirective{}},
		{"hang 1h", true, simDirective{verb: "hang", dur: time.Hour}},
		{"compute 8s", true, simDirective{verb: "compute", dur: 8 * time.Second}},
		{"compute hard", false, simDirective{}},
		{"hang 10s once hung.txt", true, simDirective{verb: "hang", dur: 10 * time.Second, path: "hung.txt"}},
		{"hang 10s twice hung.txt", false, simDirective{}},
		{"sleep 10s once hung.txt", false, simDirective{}}, // only a hang happens once
		{"ask w2 what is in seed.txt?", true, simDirective{verb: "ask", agent: "w2", question: "what is in seed.txt?"}},
		{"ask W2 hello", false, simDirective{}}, // not an agent id
		{"shiritori w2 5 りんご", true, simDirective{verb: "shiritori", agent: "w2", rounds: 5, first: "りんご"}},
		{"shiritori w2 many りんご", false, simDirective{}},
		{"Please write the report carefully.", false, simDirective{}},
		{"", false, simDirective{}},
	}
	for _, tt := range tests {
		got, ok := simParseLine(tt.line)
		if ok != tt.ok {
			t.Errorf("simParseLine(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		got.line = ""
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("simParseLine(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestSimParsePlan(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want simPlan
	}{
		{"plan gen for w1: Generate the seed | write seed.txt random 1-100", true,
			simPlan{localID: "gen", agent: "w1", title: "Generate the seed", steps: []string{"write seed.txt random 1-100"}}},
		{"- plan calc after gen,other for w2: Double it | double seed.txt result.txt; sleep 1s", true,
			simPlan{localID: "calc", after: []string{"gen", "other"}, agent: "w2", title: "Double it", steps: []string{"double seed.txt result.txt", "sleep 1s"}}},
		{"plan docs: Write the docs", true, simPlan{localID: "docs", title: "Write the docs"}},
		{"plan docs Write the docs", false, simPlan{}},        // no colon
		{"plan docs after: Write the docs", false, simPlan{}}, // after without ids
		{"plan docs by w1: Write the docs", false, simPlan{}}, // unknown keyword
		{"plan docs: | write a.txt x", false, simPlan{}},      // no title
	}
	for _, tt := range tests {
		d, ok := simParseLine(tt.line)
		if ok != tt.ok {
			t.Errorf("simParseLine(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if ok && !reflect.DeepEqual(d.plan, tt.want) {
			t.Errorf("simParseLine(%q).plan = %+v, want %+v", tt.line, d.plan, tt.want)
		}
	}
}

func TestSimParseScript(t *testing.T) {
	desc := "Produce the numbers.\n\n- write seed.txt random 1-1000\nThen double it:\n- double seed.txt result.txt\nplan x: X\n"
	ds := simParseScript(desc)
	var verbs []string
	for _, d := range ds {
		verbs = append(verbs, d.verb)
	}
	if want := []string{"write", "double", "plan"}; !slices.Equal(verbs, want) {
		t.Fatalf("verbs = %v, want %v", verbs, want)
	}
	steps := simSteps(ds)
	if len(steps) != 2 {
		t.Fatalf("steps = %d, want 2", len(steps))
	}
	items := simStepItems(steps)
	if got, want := items[0]["title"], "Write seed.txt"; got != want {
		t.Errorf("title 0 = %v, want %v", got, want)
	}
	if got, want := items[1]["description"], "double seed.txt result.txt"; got != want {
		t.Errorf("description 1 = %v, want %v", got, want)
	}
	if got, want := items[1]["dependencies"], []string{"s1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dependencies 1 = %v, want %v", got, want)
	}
	if _, ok := items[0]["dependencies"]; ok {
		t.Errorf("the first step depends on something: %v", items[0])
	}
	// Titles stay unique under the parent.
	dup := simStepItems(simSteps(simParseScript("write a.txt 1\nwrite a.txt 2")))
	if got, want := dup[1]["title"], "Write a.txt (step 2)"; got != want {
		t.Errorf("duplicate title = %v, want %v", got, want)
	}
}

func TestSimSafePath(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".ai-pm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".ai-pm"), filepath.Join(root, "store")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := []string{"seed.txt", "out/new/deep.txt", "sub/../seed.txt", "./x.txt", "sub", ".ai-pmx/y"}
	bad := []string{"", "/etc/passwd", "../x", "sub/../../x", ".ai-pm/project.json", ".AI-PM/x", "./.ai-pm/tasks/x.json",
		"escape/x.txt", "escape", "store/project.json"}
	for _, p := range ok {
		got, err := simSafePath(root, p)
		if err != nil {
			t.Errorf("simSafePath(%q) refused: %v", p, err)
			continue
		}
		if want := filepath.Join(root, filepath.Clean(p)); got != want {
			t.Errorf("simSafePath(%q) = %q, want %q", p, got, want)
		}
	}
	for _, p := range bad {
		if got, err := simSafePath(root, p); err == nil {
			t.Errorf("simSafePath(%q) = %q, want a refusal", p, got)
		}
	}
}

func TestSimKana(t *testing.T) {
	tests := []struct {
		word        string
		first, last rune
	}{
		{"りんご", 'り', 'ご'},
		{"リンゴ", 'り', 'ご'},
		{"ちょう", 'ち', 'う'},
		{"かぼちゃ", 'か', 'や'},
		{"ぎたー", 'ぎ', 'た'},
		{"ねったいぎょ", 'ね', 'よ'},
		{"きつね。", 'き', 'ね'},
		{"hello", 0, 0},
	}
	for _, tt := range tests {
		if got := simFirstKana(tt.word); got != tt.first {
			t.Errorf("simFirstKana(%q) = %q, want %q", tt.word, got, tt.first)
		}
		if got := simLastKana(tt.word); got != tt.last {
			t.Errorf("simLastKana(%q) = %q, want %q", tt.word, got, tt.last)
		}
	}
	if got := simUnvoiced('ご'); got != 'こ' {
		t.Errorf("simUnvoiced(ご) = %q", got)
	}
	if got := simUnvoiced('ぷ'); got != 'ふ' {
		t.Errorf("simUnvoiced(ぷ) = %q", got)
	}
	if got := simUnvoiced('あ'); got != 'あ' {
		t.Errorf("simUnvoiced(あ) = %q", got)
	}
}

func TestSimWords(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range simWords {
		if seen[w] {
			t.Errorf("%s twice in the word list", w)
		}
		seen[w] = true
		if simLastKana(w) == 'ん' {
			t.Errorf("%s ends in ん", w)
		}
		if simFirstKana(w) == 0 || simKanaWord(w) != w {
			t.Errorf("%s is not a hiragana word", w)
		}
	}
}

// TestSimShiritoriChain plays both sides the way two sims do, from りんご: each word
// follows the one before, none repeats, none ends in ん, and it goes well past ten rounds.
func TestSimShiritoriChain(t *testing.T) {
	chain := []string{"りんご"}
	used := map[string]bool{"りんご": true}
	for len(chain) < 40 {
		prev := chain[len(chain)-1]
		w, ok := simNextWord(prev, used)
		if !ok {
			break
		}
		if !slices.Contains(simStarts(simLastKana(prev)), simFirstKana(w)) {
			t.Fatalf("%s does not follow %s", w, prev)
		}
		if used[w] || simLastKana(w) == 'ん' {
			t.Fatalf("bad move %s after %s", w, prev)
		}
		used[w] = true
		chain = append(chain, w)
	}
	if len(chain) < 30 {
		t.Fatalf("the chain ran dry after %d words: %s", len(chain), strings.Join(chain, " → "))
	}
	t.Logf("%s", strings.Join(chain, " → "))
	// Deterministic: the same game twice.
	again := []string{"りんご"}
	used = map[string]bool{"りんご": true}
	for len(again) < len(chain) {
		w, _ := simNextWord(again[len(again)-1], used)
		used[w] = true
		again = append(again, w)
	}
	if !slices.Equal(chain, again) {
		t.Errorf("two games differ:\n%v\n%v", chain, again)
	}
	// A word ending in ん, or with nothing left, has no answer.
	if w, ok := simNextWord("みかん", map[string]bool{}); ok {
		t.Errorf("answered %s after みかん", w)
	}
	// Katakana is read as hiragana.
	if w, ok := simNextWord("リンゴ", map[string]bool{}); !ok || simFirstKana(w) != 'ご' {
		t.Errorf("after リンゴ: %q %v", w, ok)
	}
}

func TestSimAnswer(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "seed.txt"), []byte("417\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".ai-pm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".ai-pm", "project.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &simAgent{root: root, name: "Worker Two"}
	tests := []struct{ q, want string }{
		{"what is in seed.txt?", "seed.txt contains 417"},
		{"「seed.txt」の中身は？", "Worker Two here: I don't know about that."}, // not a word of its own
		{"seed.txt", "seed.txt contains 417"},
		{"what about .ai-pm/project.json", "Worker Two here: I don't know about that."},
		{"what is the weather", "Worker Two here: I don't know about that."},
	}
	for _, tt := range tests {
		if got := s.answer(tt.q); got != tt.want {
			t.Errorf("answer(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}

func TestSimAsksStatus(t *testing.T) {
	for text, want := range map[string]bool{
		"What's your status?": true, "How is it going": true, "進捗はどうですか": true, "Any PROGRESS?": true,
		"hello": false, "please write a poem": false,
	} {
		if got := simAsksStatus(text); got != want {
			t.Errorf("simAsksStatus(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestSimKind(t *testing.T) {
	for purpose, want := range map[string]string{"shiritori": "shiritori", "Shiritori w2 3 りんご": "shiritori", "しりとり2回戦": "shiritori",
		"ask": "ask", "ask: what is in seed.txt": "ask", "": "ask"} {
		if got := simKind(purpose); got != want {
			t.Errorf("simKind(%q) = %q, want %q", purpose, got, want)
		}
	}
}
