package openapi

import (
	"encoding/json"
	"fmt"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Models returns the component schemas of every served kind and of the
// types they refer to, as the v3 documents publish them, in kube-openapi's
// form: server-side apply reads the kinds' structure (list types and keys,
// group-version-kind) from them, so that field ownership follows the same
// schemas a client sees.
func (b *Builder) Models() (map[string]*spec.Schema, error) {
	g := newSchemaGen(true)
	groups, gvPaths := b.byGroupVersion()
	for _, p := range gvPaths {
		b.paths(g, groups[p])
	}
	body, err := json.Marshal(g.defs)
	if err != nil {
		return nil, fmt.Errorf("encode openapi schemas: %w", err)
	}
	models := make(map[string]*spec.Schema, len(g.defs))
	if err := json.Unmarshal(body, &models); err != nil {
		return nil, fmt.Errorf("decode openapi schemas: %w", err)
	}
	return models, nil
}
