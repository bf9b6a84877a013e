package ui

import (
	"bytes"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aipm/aipm/filestore"
	"github.com/aipm/aipm/watch"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	Store *filestore.Store
	// Hub is woken by the process's watcher for every change under .ai-pm/ (tools.Watch);
	// each event stream subscribes to it.
	Hub *watch.Hub
	// Human is the acting human's agent id: every button acts as this human.
	Human string
	// Token is the secret every request but the page itself must carry.
	Token string
	// Hosts are the values of the Host header this server answers, e.g. "127.0.0.1:8080".
	Hosts []string
	// Heartbeat is how often an idle event stream gets a comment line, so that a page
	// whose server went away notices; zero means 20 seconds.
	Heartbeat time.Duration
	// Aipm is the aipm executable ({aipm} in agent commands), to check the approval of
	// agent commands as `aipm trust` does; empty means this process's executable.
	Aipm string
	// Queue is the merge queue of the clone around the store; nil outside a Git
	// repository (the page then shows no diffs and offers no landing actions).
	Queue Queue
}

// Server serves the page, its read API, its event stream and its actions.
type Server struct {
	o     Options
	mux   *http.ServeMux
	board board
	// machine is this machine's id, to tell a landing whose worktree is in another
	// machine's clone (that machine's queue retries it); "" outside Git.
	machine string
}

// New returns the server for o.
func New(o Options) *Server {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 20 * time.Second
	}
	if o.Aipm == "" {
		o.Aipm, _ = os.Executable()
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	if o.Queue != nil {
		s.machine, _ = o.Store.MachineID() // "": every landing counts as this machine's
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(static)
	s.mux.Handle("GET /{$}", files)
	s.mux.Handle("GET /app.js", files)
	s.mux.Handle("GET /style.css", files)
	s.mux.HandleFunc("GET /events", s.token(s.events))
	s.mux.HandleFunc("GET /api/state", s.token(s.getState))
	s.mux.HandleFunc("GET /api/tasks/{id}", s.token(s.getTask))
	s.mux.HandleFunc("GET /api/tasks/{id}/diff", s.token(s.getDiff))
	s.mux.HandleFunc("GET /api/tasks/{id}/moves", s.token(s.getMoves))
	s.mux.HandleFunc("GET /api/runs/{id}/log", s.token(s.getLog))
	s.mux.HandleFunc("GET /api/chat/{agent}", s.token(s.getChat))
	s.mux.HandleFunc("POST /api/tasks", s.token(s.postCreate))
	s.mux.HandleFunc("POST /api/tasks/{id}/edit", s.token(s.postEdit))
	s.mux.HandleFunc("POST /api/tasks/{id}/status", s.token(s.postStatus))
	s.mux.HandleFunc("POST /api/tasks/{id}/assign", s.token(s.postAssign))
	s.mux.HandleFunc("POST /api/tasks/{id}/approve", s.token(s.postApprove))
	s.mux.HandleFunc("POST /api/tasks/{id}/reject", s.token(s.postReject))
	s.mux.HandleFunc("POST /api/tasks/{id}/land/retry", s.token(s.postRetry))
	s.mux.HandleFunc("POST /api/tasks/{id}/land/abandon", s.token(s.postAbandon))
	s.mux.HandleFunc("POST /api/chat/{agent}/send", s.token(s.postSend))
	s.mux.HandleFunc("POST /api/chat/{agent}/read", s.token(s.postRead))
	s.mux.HandleFunc("POST /api/inbox/read", s.token(s.postInboxRead))
	s.mux.HandleFunc("POST /api/chat/{agent}/open", s.token(s.postOpen))
	s.mux.HandleFunc("POST /api/chat/{agent}/close", s.token(s.postClose))
	s.mux.HandleFunc("POST /api/project/{status}", s.token(s.postProject))
	return s
}

// ServeHTTP refuses a request whose Host is not the address served (DNS rebinding: a
// foreign site's name resolved to 127.0.0.1 reaches this port with its own name as Host),
// then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(s.o.Hosts, strings.ToLower(r.Host)) {
		http.Error(w, fmt.Sprintf("aipm ui: refused: this server answers requests for %s, not %q; open the URL aipm ui printed",
			strings.Join(s.o.Hosts, " or "), r.Host), http.StatusForbidden)
		return
	}
	// The page's own files only: task titles and messages come from agents and clones, and
	// the page sets them as text; this is the second line if one ever were not.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if s.hasToken(r) {
		// The connection is the token holder's: it leaves the small budget of those
		// that have not shown it (Gate).
		if c, ok := r.Context().Value(gateKey{}).(*gateConn); ok {
			c.trusted()
		}
	}
	s.mux.ServeHTTP(w, r)
}

// hasToken says whether r carries the token: in the X-Aipm-Token header, or, for a GET
// (an EventSource cannot set headers, and the page's URL carries it), the token query
// parameter.
func (s *Server) hasToken(r *http.Request) bool {
	got := r.Header.Get("X-Aipm-Token")
	if got == "" && r.Method == http.MethodGet {
		got = r.URL.Query().Get("token")
	}
	return s.o.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Token)) == 1
}

// token wraps a handler that needs the token: in the X-Aipm-Token header, or, for
// a GET (an EventSource cannot set headers), the token query parameter. A state-changing
// request must use the header, which a form on another site cannot send.
func (s *Server) token(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.hasToken(r) {
			writeError(w, http.StatusForbidden, "forbidden", "this request needs the token of this aipm ui",
				"open the URL aipm ui printed (it carries the token)")
			return
		}
		h(w, r)
	}
}

// actor is the acting human, attributed as a click in the page.
func (s *Server) actor() filestore.Actor {
	return filestore.Actor{ID: s.o.Human, Via: filestore.ViaUI}
}

// events streams one "change" event per batch of changes under .ai-pm/: the paths
// (relative to .ai-pm/), the rows of the tasks whose files changed, the ids of those whose
// file is gone, and the project, agents and attention list when they changed — so what a
// change costs does not grow with the project. After a rescan (anything may have changed)
// ("" among the paths) the event says "reset" and the page reads the state again.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub := s.o.Hub.SubscribePaths()
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	// The first event tells the page the stream is up, so that it reads the state once
	// subscribed: a change landing between its read and the subscription is not lost.
	fmt.Fprint(w, "retry: 1000\nevent: hello\ndata: {}\n\n")
	fl.Flush()
	beat := time.NewTicker(s.o.Heartbeat)
	defer beat.Stop()
	var lastMeta []byte // the meta this stream sent last; nil: the first change sends it
	for {
		select {
		case <-r.Context().Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": still here\n\n")
		case <-sub.C:
			b, err := s.change(sub.Paths(), &lastMeta)
			if err != nil {
				return
			}
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", b)
		}
		fl.Flush()
	}
}

// changeEvent is the data of a "change" event.
type changeEvent struct {
	Paths   []string        `json:"paths"`
	Reset   bool            `json:"reset,omitempty"`
	Tasks   []taskRow       `json:"tasks,omitempty"`
	Removed []string        `json:"removed,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

func (s *Server) change(paths []string, lastMeta *[]byte) ([]byte, error) {
	ev := changeEvent{Paths: paths}
	if paths == nil || slices.Contains(paths, "") { // a rescan: anything may have changed
		ev.Paths, ev.Reset = []string{}, true
		*lastMeta = nil
		return json.Marshal(ev)
	}
	ev.Tasks, ev.Removed = s.updateRows(paths)
	if m, err := s.readMeta(); err == nil {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(b, *lastMeta) {
			ev.Meta, *lastMeta = b, b
		}
	}
	// A store error here (a file caught half-written) is read again at the next change.
	return json.Marshal(ev)
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(v); err != nil {
		// The header is out; the page sees a broken body and says so.
		return
	}
}

// apiError is the body of every refusal: the same code, message and hint the CLI prints.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, message, hint string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apiError{Error: code, Message: message, Hint: hint})
}

// storeError answers a store error with the status its kind means.
func storeError(w http.ResponseWriter, err error) {
	var fe *filestore.Error
	if !errors.As(err, &fe) {
		writeError(w, http.StatusInternalServerError, "internal", err.Error(), "")
		return
	}
	status := http.StatusBadRequest
	switch {
	case errors.Is(err, filestore.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, filestore.ErrUnauthorized):
		status = http.StatusForbidden
	case errors.Is(err, filestore.ErrConflict), errors.Is(err, filestore.ErrExists):
		status = http.StatusConflict
	case errors.Is(err, filestore.ErrCorrupt):
		status = http.StatusInternalServerError
	}
	writeError(w, status, fe.Code, fe.Message, fe.Hint)
}

// maxBody bounds a request body: the largest is a chat message.
const maxBody = 1 << 20

// readBody decodes the JSON body of an action into v.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_argument", "the request body is over 1 MiB", "send less")
		return false
	}
	if len(b) == 0 {
		return true
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_argument", "the request body is not the JSON expected: "+err.Error(), "")
		return false
	}
	return true
}
