package handler

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// outputKind is what form the client asked the response in.
type outputKind int

const (
	outputObject outputKind = iota
	outputTable
	outputPartialMetadata
)

// mediaChoice is the negotiated response encoding.
type mediaChoice struct {
	yaml      bool
	proto     bool
	kind      outputKind
	tableVers string // "v1" or "v1beta1" for meta.k8s.io Table/PartialObjectMetadata
	// partialAs is the kind asked for with outputPartialMetadata:
	// PartialObjectMetadata or PartialObjectMetadataList.
	partialAs string
	// pretty indents JSON (see prettyPrint).
	pretty bool
}

// negotiate picks the first Accept entry we can serve. Protobuf is served
// for objects (client-go's default for built-in types); Tables and
// PartialObjectMetadata are served as JSON, which such clients list next.
func negotiate(r *http.Request) (mediaChoice, error) {
	mc, err := negotiateAccept(r)
	mc.pretty = !mc.proto && !mc.yaml && prettyPrint(r)
	return mc, err
}

// prettyPrint reports whether JSON answers are indented: when ?pretty= says
// so, as upstream's. Upstream also indents by default for curl, wget and
// browsers; kube-lite's scripts (hack/up.sh) grep compact JSON from curl.
func prettyPrint(r *http.Request) bool {
	if !strings.Contains(r.URL.RawQuery, "pretty") {
		return false
	}
	pretty, _ := strconv.ParseBool(r.URL.Query().Get("pretty"))
	return pretty
}

func negotiateAccept(r *http.Request) (mediaChoice, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return mediaChoice{}, nil
	}
	mediaKnown := false
	for _, e := range acceptEntries(accept) {
		mt, params := e.mt, e.params
		var c mediaChoice
		switch mt {
		case "application/json", "*/*", "application/*":
		case "application/yaml":
			c.yaml = true
		case protobufType:
			mediaKnown = true
			if params["as"] != "" {
				continue
			}
			c.proto = true
		default:
			continue
		}
		mediaKnown = true
		switch params["as"] {
		case "":
		case "Table":
			if params["g"] != "meta.k8s.io" || !metaVersion(params["v"]) {
				continue
			}
			c.kind, c.tableVers = outputTable, versionOr(params["v"])
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if params["g"] != "meta.k8s.io" || !metaVersion(params["v"]) {
				continue
			}
			c.kind, c.tableVers, c.partialAs = outputPartialMetadata, versionOr(params["v"]), params["as"]
		default:
			continue
		}
		return c, nil
	}
	if !mediaKnown {
		return mediaChoice{}, notAcceptable(r)
	}
	return mediaChoice{}, failure(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: "+strings.Join(objectTypes, ", "))
}

// acceptEntry is one media range of an Accept header.
type acceptEntry struct {
	mt     string
	params map[string]string
	q      float64
}

// acceptEntries lists the media ranges of an Accept header in the order
// upstream tries them: by quality, highest first, and a range naming its
// type before a "*" one. Quality orders, it does not exclude: upstream
// serves even a range of q=0 when nothing else fits (a q that does not
// parse counts as 0).
func acceptEntries(accept string) []acceptEntry {
	var out []acceptEntry
	for _, entry := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(entry))
		if err != nil {
			continue
		}
		e := acceptEntry{mt: mt, params: params, q: 1}
		if q, ok := params["q"]; ok {
			// Read as upstream's parser does: a float32, 0 when unreadable.
			f, err := strconv.ParseFloat(q, 32)
			if err != nil {
				f = 0
			}
			e.q = f
		}
		out = append(out, e)
	}
	// Upstream's order is sort.Sort with this comparison, which is not a
	// strict weak order (a named type goes before "*" whatever their
	// qualities): sort.Sort is used too so that headers of a few entries,
	// sorted by insertion, come out in the same order.
	sort.Sort(byQuality(out))
	return out
}

type byQuality []acceptEntry

func (s byQuality) Len() int      { return len(s) }
func (s byQuality) Swap(i, j int) { s[i], s[j] = s[j], s[i] }
func (s byQuality) Less(i, j int) bool {
	ti, si, _ := strings.Cut(s[i].mt, "/")
	tj, sj, _ := strings.Cut(s[j].mt, "/")
	switch {
	case s[i].q > s[j].q:
		return true
	case ti != "*" && tj == "*":
		return true
	default:
		return si != "*" && sj == "*"
	}
}

// negotiated is the form ServeHTTP negotiated for the request, or, for a
// request served without it, the one negotiate picks.
func negotiated(r *http.Request) (mediaChoice, error) {
	if info, ok := request.InfoFrom(r.Context()); ok {
		if mc, ok := info.Media.(mediaChoice); ok {
			return mc, nil
		}
	}
	return negotiate(r)
}

// metaVersion reports whether meta.k8s.io serves Tables and partial
// metadata in version v (empty: the current one).
func metaVersion(v string) bool { return v == "" || v == "v1" || v == "v1beta1" }

// notAcceptable is upstream's 406 for an Accept header naming no media type
// the endpoint produces: the list it gives includes the watch streams where
// the request could be a watch.
func notAcceptable(r *http.Request) error {
	types := objectTypes
	if info, ok := request.InfoFrom(r.Context()); ok && info.Name == "" && (info.Verb == "list" || info.Verb == "watch") {
		types = append(slices.Clip(types), "application/json;stream=watch", protobufType+";stream=watch")
	}
	err := failure(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"406: Not Acceptable\n\nAvailable representations: "+strings.Join(types, ", "))
	err.ErrStatus.Details = &metav1.StatusDetails{}
	return err
}

func versionOr(v string) string {
	if v == "" {
		return "v1"
	}
	return v
}

const protobufType = "application/vnd.kubernetes.protobuf"

// applyPatchType is server-side apply's body: the applier's configuration,
// in YAML (or JSON, which is YAML).
const applyPatchType = "application/apply-patch+yaml"

// The media types a body may come in, listed as upstream lists them when it
// refuses another: objects (and DeleteOptions) in the serializations served,
// patches in the patch types, server-side apply's included.
var (
	objectTypes = []string{"application/json", "application/yaml", protobufType}
	patchTypes  = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", applyPatchType}
)

// maxBodyBytes is the largest request body accepted (upstream's limit is 3 MiB).
const maxBodyBytes = 3 << 20

// readBody returns the body as JSON, converting YAML, and the media type,
// which must be one of accepted (or a YAML spelling of application/yaml).
func readBody(r *http.Request, accepted []string) ([]byte, string, error) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, "", unsupportedMediaType(accepted)
		}
	}
	switch mt {
	case "application/x-yaml", "text/yaml":
		mt = "application/yaml"
	}
	if !slices.Contains(accepted, mt) {
		return nil, "", unsupportedMediaType(accepted)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(body) > maxBodyBytes {
		return nil, "", apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	if mt == "application/yaml" {
		js, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, "", apierrors.NewBadRequest(fmt.Sprintf("error converting YAML to JSON: %v", err))
		}
		return js, "application/json", nil
	}
	return body, mt, nil
}

func unsupportedMediaType(accepted []string) error {
	if slices.Equal(accepted, patchTypes) {
		// Upstream's PATCH routes refuse other types before its handler
		// runs, in the routing library's words.
		err := failure(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "415: Unsupported Media Type")
		err.ErrStatus.Details = &metav1.StatusDetails{}
		return err
	}
	return failure(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(accepted, ", "))
}
