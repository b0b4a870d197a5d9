//go:build unix && !linux

package beneath

// openBeneath opens rel beneath dirfd one component at a time with
// O_NOFOLLOW (openat2 is Linux's).
func openBeneath(dirfd int, rel string, flag int, mode uint32) (int, error) {
	return walk(dirfd, rel, flag, mode)
}

// pinnedPath is the name: without /proc/self/fd, work inside the directory
// goes by name again.
func pinnedPath(_ int, name string) string { return name }
