package gitstate

import (
	"context"
	"strings"
	"testing"

	"github.com/aipm/aipm/filestore"
)

func TestOverLongLine(t *testing.T) {
	limit := filestore.MaxLine()
	long := strings.Repeat("a", limit+1)
	for _, c := range []struct {
		data    string
		n, size int
	}{
		{"", 0, 0},
		{"a\nb\n", 0, 0},
		{strings.Repeat("a", limit) + "\n", 0, 0},
		{"a\n" + long + "\nb\n", 2, limit + 1},
		{"a\nb\n" + long, 3, limit + 1}, // a torn last line counts too
	} {
		if n, size := overLongLine([]byte(c.data)); n != c.n || size != c.size {
			t.Errorf("overLongLine(%d bytes) = %d, %d; want %d, %d", len(c.data), n, size, c.n, c.size)
		}
	}
}

// A round takes in at most MaxRoundFiles of another clone's changed paths, names the rest
// in one line, and still pushes this clone's own work.
func TestRoundFileCountBound(t *testing.T) {
	a, b := twoClones(t)
	ctx := context.Background()
	for range 5 {
		if _, err := a.CreateTask(owner, filestore.NewTask{Title: "From A"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (&Syncer{Store: a, Remote: "origin"}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	mine, err := b.CreateTask(owner, filestore.NewTask{Title: "From B"})
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { MaxRoundFiles = n }(MaxRoundFiles)
	MaxRoundFiles = 3
	r, err := (&Syncer{Store: b, Remote: "origin"}).Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Merged) > 3 {
		t.Errorf("merged %d paths, over the bound of 3: %q", len(r.Merged), r.Merged)
	}
	found := false
	for _, l := range r.Refused {
		if strings.Contains(l, "3 more path(s): over the 3 files one round takes in: not taken (commit ") {
			found = true
		}
	}
	if !found {
		t.Errorf("refused %q, want the excess named", r.Refused)
	}
	if !r.Pushed {
		t.Errorf("round %+v: this clone's own work not pushed", r)
	}
	if files := mustGit(t, b.Dir(), "ls-tree", "-r", "--name-only", "origin/"+Branch); !strings.Contains(files, mine.ID) {
		t.Errorf("the remote lacks this clone's task %s:\n%s", mine.ID, files)
	}
}
