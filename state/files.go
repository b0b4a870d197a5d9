package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// copyChunk is the size of the reads of copyFile; cancellation is checked
// between chunks.
const copyChunk = 1 << 20

// errExists is returned by linkOrCopy when dst exists.
var errExists = errors.New("file exists")

// linkOrCopy makes dst a hard link to src, or, when copyOnly or the link
// fails (another filesystem, a filesystem without hard links), a copy of
// it. It returns errExists when dst exists already; it never replaces dst.
func linkOrCopy(ctx context.Context, src, dst string, copyOnly bool) error {
	if !copyOnly {
		err := os.Link(src, dst)
		if err == nil {
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return errExists
		}
		if _, statErr := os.Stat(src); statErr != nil {
			return statErr // the source is missing: no use copying
		}
	}
	if _, err := os.Lstat(dst); err == nil {
		return errExists
	}
	return copyFile(ctx, src, dst)
}

// copyFile copies src to dst: into a temporary file next to dst, synced,
// then renamed to dst, so that dst never holds a partial file. It honors
// ctx between chunks.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return copyFrom(ctx, in, dst)
}

// copyFrom copies the open file in to dst as copyFile does.
func copyFrom(ctx context.Context, in io.Reader, dst string) (err error) {
	tmp := dst + ".tmp-" + randomHex(6)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	buf := make([]byte, copyChunk)
	for {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// randomHex returns 2n random hex digits.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// immutableFile reports whether a Pebble file is never modified once
// written (sstables and blob files), so that it may be shared between
// snapshots and hard-linked.
func immutableFile(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// safeName makes s usable as part of a file name: bytes other than ASCII
// letters, digits, '.', '_' and '-' are %-escaped, and long names are
// shortened with a hash, so different uids give different names.
func safeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	out := b.String()
	if out == "." || out == ".." {
		out = strings.ReplaceAll(out, ".", "%2E")
	}
	if len(out) > 80 {
		out = out[:60] + "~" + fnvHex(s)
	}
	return out
}

// fnvHex returns the 64-bit FNV-1a hash of s in hex.
func fnvHex(s string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x", h)
}

// validFileName reports whether name is a plain file name (no directory).
func validFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// validRelPath reports whether p is a slash-separated relative path that
// stays below its base directory.
func validRelPath(p string) bool {
	return p != "" && !strings.Contains(p, `\`) && filepath.IsLocal(filepath.FromSlash(p))
}
