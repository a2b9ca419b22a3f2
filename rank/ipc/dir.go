//go:build unix

package ipc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// DefaultSendTimeout bounds how long SendFD waits for room in a full
// receive queue when [Options].SendTimeout is zero.
const DefaultSendTimeout = 30 * time.Second

// Options configures [Open].
type Options struct {
	// JobID names the job directory, which every process of a job must
	// share. Empty means the value of the environment variable [JobEnv],
	// else an id derived from the group (see [JobID]). Letters, digits,
	// '.', '_' and '-', at most 64 bytes.
	JobID string
	// BaseDir is the directory the job directory is created in; empty
	// means [TempDir].
	BaseDir string
	// Pid is the pid the channel is addressed by; 0 means os.Getpid(). A
	// process running several ranks as goroutines opens one channel per
	// rank under distinct ids. Such channels can only talk to channels of
	// the same process: a channel of another process must be addressed by
	// that process's pid, as the credential check requires.
	Pid int
	// SendTimeout bounds how long SendFD waits for room in the receiver's
	// queue; 0 means [DefaultSendTimeout].
	SendTimeout time.Duration
}

// JobEnv names the environment variable that supplies the job id when
// [Options].JobID is empty.
const JobEnv = "SYMMEM_IPC_JOB"

// TempDir is the directory job directories are created under: the first
// non-empty of the environment variables TMPDIR, TMP, TEMP and TEMPDIR, else
// /tmp.
func TempDir() string {
	for _, k := range []string{"TMPDIR", "TMP", "TEMP", "TEMPDIR"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "/tmp"
}

// JobID returns the job id a channel opened with opts and group uses:
// opts.JobID, else the value of [JobEnv], else an id derived from the sorted,
// de-duplicated group, so processes that open with the same group meet in
// the same directory.
func JobID(group []int, opts Options) string {
	if opts.JobID != "" {
		return opts.JobID
	}
	if v := os.Getenv(JobEnv); v != "" {
		return v
	}
	pids := slices.Clone(group)
	slices.Sort(pids)
	pids = slices.Compact(pids)
	h := sha256.New()
	for _, p := range pids {
		h.Write(strconv.AppendInt(nil, int64(p), 10))
		h.Write([]byte{','})
	}
	return "g" + hex.EncodeToString(h.Sum(nil)[:12])
}

// checkJobID accepts ids made of letters, digits, '.', '_' and '-', at most
// 64 bytes, that are not "." or "..".
func checkJobID(id string) error {
	if id == "" || len(id) > 64 || id == "." || id == ".." {
		return fmt.Errorf("invalid job id %q: want 1 to 64 bytes, not %q or %q", id, ".", "..")
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("invalid job id %q: byte %q is not a letter, digit, '.', '_' or '-'", id, c)
		}
	}
	return nil
}

// JobDir is the private directory that the channels of a job bind their
// sockets in: <base>/symmem-ipc-<uid>-<job id>, where base is opts.BaseDir
// or [TempDir]. It does not create the directory.
func JobDir(group []int, opts Options) (string, error) {
	id := JobID(group, opts)
	if err := checkJobID(id); err != nil {
		return "", err
	}
	base := opts.BaseDir
	if base == "" {
		base = TempDir()
	}
	return filepath.Join(base, fmt.Sprintf("symmem-ipc-%d-%s", os.Getuid(), id)), nil
}

// ensurePrivateDir creates dir with mode 0700, or accepts an existing one
// only if it is a real directory (not a symlink) owned by us with mode 0700.
func ensurePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil {
		// The umask may have cleared bits of a directory we just made.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("ipc job directory %s: %w", dir, err)
		}
	} else if !os.IsExist(err) {
		return fmt.Errorf("ipc job directory: %w", err)
	}
	return checkPrivateDir(dir)
}

// checkPrivateDir refuses dir unless it is a directory owned by the
// effective uid with permissions exactly 0700.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("ipc job directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("ipc job directory %s: refusing it: not a directory (mode %v)", dir, fi.Mode())
	}
	uid, ok := fileOwner(fi)
	if !ok {
		return fmt.Errorf("ipc job directory %s: cannot read its owner", dir)
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("ipc job directory %s: refusing it: owned by uid %d, not %d", dir, uid, os.Geteuid())
	}
	if m := fi.Mode(); m.Perm() != 0o700 || m&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 {
		return fmt.Errorf("ipc job directory %s: refusing it: mode %v, want drwx------", dir, m)
	}
	return nil
}

// fileOwner returns the uid that owns the file fi describes.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
