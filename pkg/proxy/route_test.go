package proxy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// Two clusters on one host (each its own service range) each keep their
// own policy rule: a proxy's start or cleanup deletes only the rule for its
// range, never the other's.
func TestRouteCommandsTouchOnlyTheirOwnRange(t *testing.T) {
	mine := netip.MustParsePrefix("10.96.0.0/16")
	for name, cmds := range map[string][][]string{
		"setup":   serviceRouteCommands(mine),
		"cleanup": serviceRouteCleanup(mine),
	} {
		for _, args := range cmds {
			if !slices.Contains(args, mine.String()) {
				t.Errorf("%s runs 'ip %s', which does not name %s and so may touch another cluster's range", name, strings.Join(args, " "), mine)
			}
		}
	}
}
