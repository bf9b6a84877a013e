package clone

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// OwnerError is a repository or store directory that belongs to another user.
type OwnerError struct {
	Dir string
	UID int
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("%s belongs to another user (uid %d), not to you (uid %d): another user's files decide what aipm runs and trusts, "+
		"so aipm refuses them, as git refuses such a repository. If you trust that user, allow the directory as for git: "+
		"git config --global --add safe.directory %s", e.Dir, e.UID, os.Getuid(), e.Dir)
}

// CheckOwner refuses a store whose repository root or .ai-pm directory belongs to another
// user, unless git's safe.directory (global or system configuration, never the
// repository's own) allows the root, as git itself decides.
func CheckOwner(root string) error {
	me := os.Getuid()
	if me < 0 {
		return nil // no user ids on this platform
	}
	for _, dir := range []string{root, filepath.Join(root, ".ai-pm")} {
		fi, err := os.Lstat(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		uid, ok := fileOwner(fi)
		if !ok || uid == me {
			continue
		}
		if safeDirectory(root) {
			return nil
		}
		return &OwnerError{Dir: dir, UID: uid}
	}
	return nil
}

// safeDirectory reports whether git's safe.directory setting allows root: "*", the path
// itself, or a "<prefix>/*" holding it. An empty value resets the list, as in git.
func safeDirectory(root string) bool {
	var values []string
	for _, scope := range []string{"--system", "--global"} {
		cmd := exec.Command("git", "config", scope, "--get-all", "safe.directory")
		cmd.Dir = string(filepath.Separator)
		out, err := cmd.Output()
		if err != nil {
			continue // none set there, or no git
		}
		values = append(values, strings.Split(strings.TrimRight(string(out), "\n"), "\n")...)
	}
	allowed := false
	for _, v := range values {
		v = strings.TrimSpace(v)
		switch {
		case v == "":
			allowed = false
		case v == "*":
			allowed = true
		case strings.HasSuffix(v, "/*"):
			p := filepath.Clean(strings.TrimSuffix(v, "/*"))
			if root == p || strings.HasPrefix(root, p+string(filepath.Separator)) {
				allowed = true
			}
		case filepath.Clean(v) == root:
			allowed = true
		}
	}
	return allowed
}
