package msg

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var verbRE = regexp.MustCompile(`%[-+# 0]*(?:\[(\d+)\])?\d*(?:\.\d+)?([a-zA-Z%])`)

// verbs maps each argument a format uses (1-based) to its verb, and reports whether the
// format names arguments by explicit index.
func verbs(t *testing.T, format string) (map[int]byte, bool) {
	t.Helper()
	out := map[int]byte{}
	arg, explicit := 1, false
	for _, m := range verbRE.FindAllStringSubmatch(format, -1) {
		if m[2] == "%" {
			t.Errorf("%q: use no %%%% (a text without arguments is printed as is)", format)
			continue
		}
		if m[1] != "" {
			arg, _ = strconv.Atoi(m[1])
			explicit = true
		}
		if v, ok := out[arg]; ok && v != m[2][0] {
			t.Errorf("%q: argument %d used as %%%c and %%%c", format, arg, v, m[2][0])
		}
		out[arg] = m[2][0]
		arg++
	}
	return out, explicit
}

// seedSubset are the texts whose Japanese, given word for word by a seed, names fewer
// values than the English.
var seedSubset = map[string]bool{"notification.unread": true}

// compareVerbs checks that ja takes the arguments of en with the same verbs; with subset,
// ja may leave some out, provided it names the ones it uses by index (or uses none).
func compareVerbs(t *testing.T, what, en, ja string, subset bool) {
	t.Helper()
	ev, enExplicit := verbs(t, en)
	jv, jaExplicit := verbs(t, ja)
	if enExplicit {
		t.Errorf("%s: the English %q should take its arguments in order", what, en)
	}
	for i, v := range jv {
		if ev[i] != v {
			t.Errorf("%s: Japanese uses argument %d as %%%c, English as %q", what, i, v, string(ev[i]))
		}
	}
	if len(jv) == len(ev) {
		return
	}
	if !subset {
		t.Errorf("%s: Japanese uses %d of the English's %d arguments\n en: %s\n ja: %s", what, len(jv), len(ev), en, ja)
	} else if len(jv) > 0 && !jaExplicit {
		t.Errorf("%s: a Japanese text that leaves arguments out must name the others by index: %s", what, ja)
	}
}

func TestTextsHaveBothLanguages(t *testing.T) {
	for key, tx := range texts {
		if strings.TrimSpace(tx.en) == "" || strings.TrimSpace(tx.ja) == "" {
			t.Errorf("%s: en %q, ja %q", key, tx.en, tx.ja)
		}
		compareVerbs(t, key, tx.en, tx.ja, seedSubset[key])
	}
}

func TestTranslationsTakeTheSameValues(t *testing.T) {
	for _, tab := range []struct {
		name    string
		entries []translation
		subset  bool // messages may leave out what the seed's sentence does not name
	}{{"hint", hints, false}, {"message", messages, true}} {
		seen := map[string]bool{}
		for _, e := range tab.entries {
			if e.en == "" || e.ja == "" {
				t.Errorf("%s %q: ja %q", tab.name, e.en, e.ja)
			}
			if seen[e.en] {
				t.Errorf("%s %q: twice", tab.name, e.en)
			}
			seen[e.en] = true
			if strings.Count(e.en, "%") != strings.Count(e.en, "%s") {
				t.Errorf("%s %q: the English may hold only %%s", tab.name, e.en)
			}
			if strings.Trim(e.en, "%s") == "" {
				t.Errorf("%s %q: matches anything", tab.name, e.en)
			}
			compareVerbs(t, tab.name+" "+strconv.Quote(e.en), e.en, e.ja, tab.subset)
		}
	}
}

// The seeds' Japanese, word for word.
func TestSeedTexts(t *testing.T) {
	for _, c := range []struct {
		got, want string
		whole     bool
	}{
		// seed 004
		{Text("ja", "notification.none"), "通知はありません", true},
		{Text("ja", "notification.unread", 3), "【重要】通知があります。get_notifications を呼び出して確認してください。", true},
		{Text("ja", "interrupt.notice"), "通知があります。\n\n1. get_notifications() を呼び出して詳細を確認してください\n2. 通知の指示に従ってください", true},
		// seed 002
		{Text("ja", "chat.conversation_request", "worker-a", "しりとり", 10), "worker-aから会話リクエストがあります。get_pending_messagesでメッセージを確認し、respond_chatで応答してください。", false},
		{Text("ja", "chat.conversation_ended", "cnv_1", "worker-a", "initiator_ended"), "会話が終了しました。get_next_actionで次の指示を確認してください。", false},
		{Text("ja", "start_conversation.done", "worker-b"), "会話リクエストを送信しました。send_messageでメッセージを送信できます。相手がオンラインになると会話が開始されます。", false},
		{Text("ja", "end_conversation.done", "worker-b"), "会話終了をリクエストしました。相手に通知されます。", false},
		{Message("ja", "conversation_required_for_ai_to_ai", "AI agents w1 and w2 need an active conversation to exchange messages: there is no active conversation between them"),
			"AIエージェント間のメッセージ送信にはアクティブな会話が必要です。", false},
		// seed 000
		{Text("ja", "notify_task_session.done"), "タスクセッションに通知を送信しました。次回のツール呼び出し時に通知が届きます。", true},
		{Text("ja", "self_notice.conversation", "cnv_abc"), "あなたのチャットセッションからの通知です。get_conversation_messages(conversation_id: \"cnv_abc\") で内容を確認してください。", false},
		{Text("ja", "self_notice.plain"), "【重要】この通知は、あなた自身が別のセッション（チャットセッション）から送信したものです。", false},
		{Text("ja", "update_task_from_chat.done", "manager-dev"), "タスクを更新しました。", false},
		{Text("ja", "start_task_from_chat.done", "manager-dev"), "タスクを開始しました。チャットセッションを終了し、タスクセッションで作業を開始してください。", false},
		{Text("ja", "get_my_execution_history.done"), "ログ内容を確認するには get_execution_log(execution_id) を呼び出してください。", true},
		{Text("ja", "get_execution_log.truncated"), "ログが切り詰められています。offset を指定して続きを取得できます。", true},
		{Message("ja", "unauthorized", "this operation needs a request from a superior: requester worker-qa-01 is not an ancestor of w1"),
			"この操作には上位者からの依頼が必要です。依頼者 'worker-qa-01' は 'w1' の上位者ではありません。", true},
		{Message("ja", "unauthorized", "task tsk_1 is assigned to nobody, not to w1: only its assignee can start it"),
			"自分に割り当てられたタスクのみ開始できます。タスク担当者: 未割当", true},
		{Message("ja", "unauthorized", "agent w1 may not change task tsk_1: it is assigned to w2 and was created by alice"),
			"このタスクの修正権限がありません", true},
		// seed 003
		{Text("ja", "delegate_to_chat_session.message"), "依頼をチャットセッションに登録しました。次回チャットセッション起動時に処理されます。", true},
	} {
		if c.whole && c.got != c.want || !strings.Contains(c.got, c.want) {
			t.Errorf("got  %q\nwant %q", c.got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ lang, key, want string }{
		{"", "notification.none", "no notifications"},
		{"en", "notification.none", "no notifications"},
		{"fr", "notification.none", "no notifications"}, // unknown languages read English
		{"ja", "notification.none", "通知はありません"},
		{"en", "no.such.key", "no.such.key"},
	} {
		if got := Text(c.lang, c.key); got != c.want {
			t.Errorf("Text(%q, %q) = %q, want %q", c.lang, c.key, got, c.want)
		}
	}
	if got, want := Text("en", "notification.unread", 2), "IMPORTANT: you have 2 unread notification(s). Call get_notifications and follow them."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Reordered values, and a Japanese text that names fewer values than the English.
	if got, want := Text("ja", "change.status", "あなたのタスク", "tsk_1", "Docs", "todo", "in_progress", "alice"),
		"あなたのタスク tsk_1（Docs）は alice によって todo から in_progress に変更されました。"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Text("ja", "notification.unread", 2); strings.Contains(got, "%!") {
		t.Errorf("got %q", got)
	}
}

func TestHint(t *testing.T) {
	for _, c := range []struct{ lang, code, english, want string }{
		{"en", "invalid_argument", "use one of low, medium, high", "use one of low, medium, high"},
		{"ja", "invalid_argument", "use one of low, medium, high", "low, medium, high のいずれかを指定してください"},
		{"ja", "invalid_status", "use one of todo, done", "todo, done のいずれかを指定してください"},
		{"ja", "invalid_session", "call authenticate to get a session_token", "authenticate を呼び出して session_token を取得してください"},
		{"ja", "unauthorized", "start only tasks assigned to you; ask mgr to assign it to you first", "開始できるのは自分に割り当てられたタスクだけです。先に mgr に自分への割り当てを依頼してください"},
		// a hint built around another: both parts in Japanese
		{"ja", "conversation_required_for_ai_to_ai", `it is over; call start_conversation(target_agent_id: "w2", initial_message: ...) first if there is more to say`,
			`その会話は終わっています。まだ伝えることがあれば、先にstart_conversation(target_agent_id: "w2", initial_message: "...")を呼び出してください。`},
		{"ja", "invalid_status_transition", "from todo a task can move to in_progress, blocked, cancelled", "todo のタスクが移れるのは in_progress, blocked, cancelled です"},
		// an unknown hint stays as it is
		{"ja", "whatever", "do something new", "do something new"},
		{"ja", "whatever", "", ""},
	} {
		if got := Hint(c.lang, c.code, c.english); got != c.want {
			t.Errorf("Hint(%q, %q, %q)\n got  %q\n want %q", c.lang, c.code, c.english, got, c.want)
		}
	}
	if got, want := Message("ja", "not_found", "task tsk_1 not found"), "task tsk_1 not found"; got != want {
		t.Errorf("Message kept? got %q", got)
	}
}

// sourceDirs are the packages whose texts reach agents; the coordinator also builds the prompt
// an agent CLI starts with (its error hints are for humans at the terminal).
var (
	sourceDirs = []string{"../../tools", ".."}
	keyDirs    = append(sourceDirs, "../../cmd/aipm", "../../cmd/aipm/internal/coordinator")
)

func sourceFiles(t *testing.T, dirs []string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources in %s: %v", dir, err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				out = append(out, f)
			}
		}
	}
	return out
}

// Every hint the code writes has its Japanese here: newErr(kind, code, hint, ...) in
// filestore, toolError{Hint: ...} in tools, and the hint variables and *Hint functions
// both build them from.
func TestEveryHintIsTranslated(t *testing.T) {
	known := map[string]bool{}
	for _, e := range hints {
		known[e.en] = true
	}
	fset := token.NewFileSet()
	found := 0
	for _, path := range sourceFiles(t, sourceDirs) {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		check := func(pos token.Pos, e ast.Expr) {
			h := template(e)
			if strings.Trim(h, "%s") == "" {
				return // a variable: its values are checked where they are made
			}
			found++
			if !known[h] {
				t.Errorf("%s: hint %q has no Japanese in filestore/msg/hints.go", fset.Position(pos), h)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "newErr" && len(x.Args) >= 3 {
					check(x.Pos(), x.Args[2])
				}
			case *ast.KeyValueExpr:
				if id, ok := x.Key.(*ast.Ident); ok && id.Name == "Hint" {
					check(x.Pos(), x.Value)
				}
			case *ast.AssignStmt:
				for i, l := range x.Lhs {
					name := ""
					switch lv := l.(type) {
					case *ast.Ident:
						name = lv.Name
					case *ast.SelectorExpr:
						name = lv.Sel.Name
					}
					if (name == "hint" || name == "Hint") && i < len(x.Rhs) {
						check(x.Pos(), x.Rhs[i])
					}
				}
			case *ast.FuncDecl:
				if strings.HasSuffix(x.Name.Name, "Hint") && x.Body != nil {
					ast.Inspect(x.Body, func(n ast.Node) bool {
						if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							check(r.Pos(), r.Results[0])
						}
						return true
					})
				}
			}
			return true
		})
	}
	if found < 100 {
		t.Errorf("found only %d hints in the sources; is the extraction broken?", found)
	}
}

// template is the English of a hint expression as the table holds it: string literals as
// they are, fmt.Sprintf formats with their verbs as %s ("%q" as "\"%s\""), anything else
// (a value) as %s.
func template(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, _ := strconv.Unquote(x.Value)
			return s
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			return template(x.X) + template(x.Y)
		}
	case *ast.ParenExpr:
		return template(x.X)
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(x.Args) > 0 {
			return strings.NewReplacer("%q", `"%s"`, "%d", "%s", "%v", "%s").Replace(template(x.Args[0]))
		}
	}
	return "%s"
}

var keyUse = regexp.MustCompile(`(?:msg\.Text\([^,()]+,\s*|\.text\()"([a-z_.]+)"`)

// Every key the code asks for exists, and every key is asked for.
func TestKeysAreUsed(t *testing.T) {
	used := map[string]bool{}
	for _, path := range sourceFiles(t, keyDirs) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range keyUse.FindAllStringSubmatch(string(src), -1) {
			used[m[1]] = true
			if _, ok := texts[m[1]]; !ok {
				t.Errorf("%s: key %q is not in the catalog", path, m[1])
			}
		}
	}
	var unused []string
	for k := range texts {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Errorf("keys nobody uses: %v", unused)
	}
}

// japanese matches the characters only Japanese text has: kana and kanji.
var japanese = regexp.MustCompile(`[\p{Hiragana}\p{Katakana}\p{Han}]`)

// words reports whether a text says something beyond its values and punctuation.
func words(format string) bool {
	return regexp.MustCompile(`[A-Za-z]{2,}|[\p{Hiragana}\p{Katakana}\p{Han}]`).MatchString(verbRE.ReplaceAllString(format, ""))
}

// TestCatalogIsBilingual walks the whole catalog — texts, hints, messages — as an agent
// would get each entry: under "ja" it reads Japanese, under "en" English, so no text
// reaches an agent in one language only. The hints and messages are looked up through
// Hint and Message with sample values, as the server does, which also catches an entry
// another one shadows.
func TestCatalogIsBilingual(t *testing.T) {
	sample := func(format string) string {
		n := 0
		return regexp.MustCompile(`%s`).ReplaceAllStringFunc(format, func(string) string {
			n++
			return "v" + strconv.Itoa(n)
		})
	}
	for key, tx := range texts {
		if !words(tx.en) {
			continue // values and punctuation only (": %s")
		}
		var args []any
		ev, _ := verbs(t, tx.en)
		for i := 1; i <= len(ev); i++ {
			if ev[i] == 'd' {
				args = append(args, 3)
			} else {
				args = append(args, "v")
			}
		}
		if en := Text("en", key, args...); japanese.MatchString(en) {
			t.Errorf("text %s: the English has Japanese in it: %q", key, en)
		}
		if ja := Text("ja", key, args...); !japanese.MatchString(ja) {
			t.Errorf("text %s: no Japanese under \"ja\": %q", key, ja)
		}
	}
	for _, tab := range []struct {
		name    string
		entries []translation
		lookup  func(lang, code, english string) string
	}{{"hint", hints, Hint}, {"message", messages, Message}} {
		for _, e := range tab.entries {
			english := sample(e.en)
			if got := tab.lookup("en", e.code, english); got != english {
				t.Errorf("%s %q: under \"en\" it reads %q", tab.name, e.en, got)
			}
			if !words(e.en) {
				continue
			}
			if got := tab.lookup("ja", e.code, english); got == english || !japanese.MatchString(got) {
				t.Errorf("%s %q: under \"ja\" it reads %q", tab.name, e.en, got)
			}
		}
	}
}

// Every message translation is of a message the code makes: the format of a newErr in
// filestore, or of a toolError's Message in tools. An entry whose English the code no
// longer writes would leave that refusal in English under "ja".
func TestEveryMessageTranslationIsMade(t *testing.T) {
	made := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range sourceFiles(t, sourceDirs) {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "newErr" && len(x.Args) >= 4 {
					made[template(x.Args[3])] = true
				}
			case *ast.KeyValueExpr:
				if id, ok := x.Key.(*ast.Ident); ok && id.Name == "Message" {
					made[template(x.Value)] = true
				}
			}
			return true
		})
	}
	// A message made of parts ("...: %s", the %s another format) matches its template.
	var parts []*regexp.Regexp
	for m := range made {
		if strings.Contains(m, "%s") && len(strings.ReplaceAll(m, "%s", "")) >= 20 {
			parts = append(parts, regexp.MustCompile("^"+strings.ReplaceAll(regexp.QuoteMeta(m), "%s", ".+")+"$"))
		}
	}
	for _, e := range messages {
		if made[e.en] || !words(e.en) || e.en == "nobody" || slices.ContainsFunc(parts, func(re *regexp.Regexp) bool { return re.MatchString(e.en) }) {
			continue
		}
		t.Errorf("message %q is made nowhere in the code", e.en)
	}
}
