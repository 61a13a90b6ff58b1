// Package abac is the ABAC authorization mode: a file of policies, one JSON
// object per line, in upstream's abac.authorization.kubernetes.io/v1beta1
// Policy format. A request is allowed when a policy matches it.
package abac

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kube-lite/kube-lite/pkg/apiserver/authz"
)

// Policy is one line of the policy file.
type Policy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       Spec   `json:"spec"`
}

// Spec says who may do what. "*" matches anything in a field.
type Spec struct {
	User  string `json:"user,omitempty"`
	Group string `json:"group,omitempty"`
	// Readonly restricts the policy to get, list and watch.
	Readonly bool `json:"readonly,omitempty"`
	// APIGroup, Resource and Namespace match resource requests; an empty
	// Namespace matches only cluster-scoped ones.
	APIGroup  string `json:"apiGroup,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// NonResourcePath matches other paths; a trailing "*" is a prefix glob.
	NonResourcePath string `json:"nonResourcePath,omitempty"`
}

const apiVersion = "abac.authorization.kubernetes.io/v1beta1"

// Authorizer allows what one of its policies matches.
type Authorizer struct {
	policies []Spec
}

// LoadFile reads a policy file.
func LoadFile(path string) (*Authorizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("abac: %w", err)
	}
	defer f.Close()
	z, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("abac policy file %s: %w", path, err)
	}
	return z, nil
}

// Parse reads policies, one per line; blank lines and # comments are skipped.
func Parse(r io.Reader) (*Authorizer, error) {
	z := &Authorizer{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var p Policy
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if p.APIVersion != apiVersion || p.Kind != "Policy" {
			return nil, fmt.Errorf("line %d: want apiVersion %s and kind Policy, got %q %q", n, apiVersion, p.APIVersion, p.Kind)
		}
		if p.Spec.User == "" && p.Spec.Group == "" {
			return nil, fmt.Errorf("line %d: a policy names a user or a group", n)
		}
		z.policies = append(z.policies, p.Spec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return z, nil
}

// Authorize implements authz.Authorizer.
func (z *Authorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	for _, p := range z.policies {
		if Matches(p, a) {
			return authz.Allow, "", nil
		}
	}
	return authz.NoOpinion, "No policy matched.", nil
}

// Matches reports whether policy p covers the request.
func Matches(p Spec, a authz.Attributes) bool {
	if !subjectMatches(p, a) {
		return false
	}
	if p.Readonly && !a.IsReadOnly() {
		return false
	}
	if !a.ResourceRequest {
		return p.NonResourcePath != "" && (p.NonResourcePath == "*" || p.NonResourcePath == a.Path ||
			strings.HasSuffix(p.NonResourcePath, "*") && strings.HasPrefix(a.Path, strings.TrimSuffix(p.NonResourcePath, "*")))
	}
	return wild(p.Namespace, a.Namespace) && wild(p.Resource, a.Resource) && wild(p.APIGroup, a.APIGroup)
}

func wild(pattern, v string) bool { return pattern == "*" || pattern == v }

func subjectMatches(p Spec, a authz.Attributes) bool {
	if p.User != "" && !(p.User == "*" || p.User == a.UserName()) {
		return false
	}
	if p.Group != "" && !(p.Group == "*" || slices.Contains(a.Groups(), p.Group)) {
		return false
	}
	return true
}
