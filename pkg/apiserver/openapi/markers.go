package openapi

import "strings"

//go:generate go run ./internal/genmarkers -o markers_generated.go

// fieldMarkers are what upstream's openapi-gen reads from a field's comment
// (+optional, +required, +listType, +listMapKey). Reflection cannot see
// comments, so internal/genmarkers extracts them from the k8s.io/api sources
// once, into markers_generated.go.
type fieldMarkers struct {
	optional    bool
	required    bool
	listType    string
	listMapKeys []string
	// mapType is "atomic" for a map or struct field owned and replaced as
	// a whole (+mapType, +structType).
	mapType string
	// defaultValue is the field's +default, JSON: server-side apply fills
	// a list item's key fields from it (a port without its protocol).
	defaultValue string
}

// isRequired applies upstream's rule: +required wins, then +optional, then
// a json tag without omitempty means required.
func isRequired(m fieldMarkers, jsonOpts string) bool {
	switch {
	case m.required:
		return true
	case m.optional:
		return false
	}
	for _, o := range strings.Split(jsonOpts, ",") {
		// omitzero is not in upstream's rule, but a field the encoder may
		// leave out cannot be one a client must send.
		if o == "omitempty" || o == "omitzero" || o == "inline" {
			return false
		}
	}
	return true
}
