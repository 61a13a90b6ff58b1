package etcd3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	etcdversion "go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/version"
)

// Older etcd servers answer a progress request wrongly: before 3.4.25 and
// 3.5.8 with the stream's current revision while a watch that started at
// an older revision has not yet received its events (etcd-io/etcd#15220),
// which made kube-lite's watches skip those events as sent already; before
// 3.4.31 and 3.5.13 they may never answer for a new watch that had no event
// to catch up on (etcd-io/etcd#17507). Upstream's storage feature checker
// enables RequestWatchProgress from the same versions.
var (
	progressFixed34 = version.MustParseSemantic("3.4.31")
	minor35         = version.MustParseSemantic("3.5.0")
	progressFixed35 = version.MustParseSemantic("3.5.13")
)

// progressCheckTimeout bounds the version check of all members.
const progressCheckTimeout = 5 * time.Second

// ErrWatchProgressUnsupported: the etcd cluster has a member whose answers
// to progress requests cannot be trusted, so the store sends none.
var ErrWatchProgressUnsupported = errors.New("etcd3: watch progress requests are off for this etcd version")

// versionAnswersProgress says whether an etcd server of version v answers
// progress requests correctly. An unparsable version is not trusted.
func versionAnswersProgress(v string) bool {
	ver, err := version.ParseSemantic(v)
	if err != nil {
		return false
	}
	if ver.LessThan(progressFixed34) {
		return false
	}
	return !ver.AtLeast(minor35) || ver.AtLeast(progressFixed35)
}

// clusterAnswersProgress says whether progress may be requested of a
// cluster whose members run versions: only when every one of them answers
// correctly (the client may talk to any of them).
func clusterAnswersProgress(versions []string) bool {
	if len(versions) == 0 {
		return false
	}
	for _, v := range versions {
		if !versionAnswersProgress(v) {
			return false
		}
	}
	return true
}

// statusClient is what the version check needs of a client.
type statusClient interface {
	Endpoints() []string
	Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error)
}

// memberVersions returns the version of every endpoint of c. A client
// without endpoints calls a server in this process (the embedded etcd),
// which is the etcd this binary was built with.
func memberVersions(ctx context.Context, c statusClient) ([]string, error) {
	eps := c.Endpoints()
	if len(eps) == 0 {
		return []string{etcdversion.Version}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, progressCheckTimeout)
	defer cancel()
	versions := make([]string, 0, len(eps))
	for _, ep := range eps {
		resp, err := c.Status(ctx, ep)
		if err != nil {
			return nil, fmt.Errorf("etcd3: version of %s: %w", ep, err)
		}
		versions = append(versions, resp.Version)
	}
	return versions, nil
}

// logProgressDecision says once per client which etcd versions were found
// and what that means for watches.
func logProgressDecision(versions []string, ok bool) {
	if ok {
		slog.Info("etcd: watch progress requests on", "etcdVersions", strings.Join(versions, ","))
		return
	}
	slog.Warn("etcd: watch progress requests off: a member runs an etcd older than 3.4.31 (3.5.13 for 3.5) "+
		"that may report progress before a watch has its events (etcd-io/etcd#15220, #17507); "+
		"watches get bookmarks from the watch cache only and consistent watch-lists are served from etcd",
		"etcdVersions", strings.Join(versions, ","))
}
