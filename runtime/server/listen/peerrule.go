package listen

import (
	"os"
	"os/user"
	"slices"
	"strconv"
)

// PeerRule says which local users may call the server: its own uid, root,
// and the members of the --allow-group group. The REST API (package
// runtime/rest) admits the same users on loopback connections as the job
// service's Unix socket does.
type PeerRule struct{ rule peerRule }

// NewPeerRule returns the rule of a server run by this process's user that
// also admits allowGroup (a name or gid; "" for none).
func NewPeerRule(allowGroup string) (PeerRule, error) {
	r := peerRule{uid: uint32(os.Geteuid()), gid: -1}
	if allowGroup != "" {
		g, err := lookupGroup(allowGroup)
		if err != nil {
			return PeerRule{}, err
		}
		r.gid, r.group = g, allowGroup
	}
	return PeerRule{rule: r}, nil
}

// AllowsUID says whether the user uid may call the server: the server's
// own uid, root, or a member (primary or supplementary) of the group.
func (r PeerRule) AllowsUID(uid uint32) bool {
	if uid == r.rule.uid || uid == 0 {
		return true
	}
	if r.rule.gid < 0 {
		return false
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return false
	}
	ids, err := u.GroupIds()
	return err == nil && slices.Contains(ids, strconv.Itoa(r.rule.gid))
}

// String says who the rule admits, for errors and logs.
func (r PeerRule) String() string { return r.rule.String() }
