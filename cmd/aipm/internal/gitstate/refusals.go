package gitstate

import (
	"bufio"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// A path a round refuses once it has read it (a file that does not decode, work over
// MaxUnfinished, a file where this clone has a directory) counts against the round's
// bounds like a path it takes. A round that leaves paths for the next commits only what
// it took, so the next would find the refused paths still to take, read them first and
// refuse them again: a remote with more such paths than a round takes would keep every
// round from getting further, and from pushing. So the rounds of one take-in remember
// what they refused — each path with the version of theirs refused — in the state
// worktree's git directory, and a later round refuses that version of the path unread.
// The round that takes in the last of theirs merges theirs, which settles every refusal
// in the history, and forgets them.

// refusedFile names, per remote, the paths refused by the rounds of a take-in not yet
// ended.
func refusedFile(g gitCmd, remote string) string { return remoteFile(g, "aipm-refused-", remote) }

// remoteFile names, in the state worktree's git directory, prefix followed by the remote's
// name; "" when there is no such directory.
func remoteFile(g gitCmd, prefix, remote string) string {
	gitdir, err := g.run("rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return ""
	}
	return filepath.Join(gitdir, prefix+url.PathEscape(remote))
}

// writeOrRemove replaces the file p with data, or removes it when data is empty; nothing
// when p is "".
func writeOrRemove(p string, data []byte) error {
	if p == "" {
		return nil
	}
	if len(data) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// readRefused returns the remembered refusals: path → the object id of theirs refused.
func readRefused(g gitCmd, remote string) map[string]string {
	out := map[string]string{}
	p := refusedFile(g, remote)
	if p == "" {
		return out
	}
	f, err := os.Open(p)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// <object id> TAB <path>: a state path holds no control character (StatePath).
		if id, path, ok := strings.Cut(sc.Text(), "\t"); ok && id != "" && path != "" {
			out[path] = id
		}
	}
	return out
}

// saveRefused remembers refused (path → object id), or forgets every refusal when it is
// empty.
func saveRefused(g gitCmd, remote string, refused map[string]string) error {
	var b strings.Builder
	for path, id := range refused {
		b.WriteString(id + "\t" + path + "\n")
	}
	return writeOrRemove(refusedFile(g, remote), []byte(b.String()))
}
