package podsecurity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Config is upstream's PodSecurityConfiguration: the levels of a namespace
// without pod-security labels, and who and what is never checked.
type Config struct {
	Defaults   Defaults   `json:"defaults"`
	Exemptions Exemptions `json:"exemptions"`
}

// Defaults are the level and version of each mode a namespace does not
// label; empty means privileged and latest, as upstream.
type Defaults struct {
	Enforce        string `json:"enforce,omitempty"`
	EnforceVersion string `json:"enforce-version,omitempty"`
	Audit          string `json:"audit,omitempty"`
	AuditVersion   string `json:"audit-version,omitempty"`
	Warn           string `json:"warn,omitempty"`
	WarnVersion    string `json:"warn-version,omitempty"`
}

// Exemptions are never checked: requests by these users, pods of these
// runtime classes, anything in these namespaces.
type Exemptions struct {
	Usernames      []string `json:"usernames,omitempty"`
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
	Namespaces     []string `json:"namespaces,omitempty"`
}

// WithConfig applies an AdmissionConfiguration's PodSecurity settings.
func WithConfig(c *Config) Option {
	return func(p *Plugin) {
		if c == nil {
			return
		}
		p.exempt = c.Exemptions
		d := c.Defaults
		p.defaults = policy{
			enforce: defaulted(d.Enforce, d.EnforceVersion),
			audit:   defaulted(d.Audit, d.AuditVersion),
			warn:    defaulted(d.Warn, d.WarnVersion),
		}
	}
}

// defaulted is a mode's level and version, privileged and latest where
// the configuration leaves them out.
func defaulted(level, version string) levelVersion {
	if level == "" {
		level = Privileged
	}
	if version == "" {
		version = "latest"
	}
	return levelVersion{level, version}
}

// The API versions upstream reads these files in.
var (
	admissionConfigVersions = []string{"apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1", "apiserver.k8s.io/v1alpha1"}
	podSecurityVersions     = []string{"pod-security.admission.config.k8s.io/v1", "pod-security.admission.config.k8s.io/v1beta1", "pod-security.admission.config.k8s.io/v1alpha1"}
)

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type admissionConfiguration struct {
	typeMeta `json:",inline"`
	Plugins  []struct {
		Name          string          `json:"name"`
		Path          string          `json:"path,omitempty"`
		Configuration json.RawMessage `json:"configuration,omitempty"`
	} `json:"plugins"`
}

type podSecurityConfiguration struct {
	typeMeta `json:",inline"`
	Config   `json:",inline"`
}

// LoadConfig reads the PodSecurity plugin's configuration from an
// AdmissionConfiguration file (--admission-control-config-file), inline or
// in the file its path names (relative to the AdmissionConfiguration's
// directory), as upstream. Without a PodSecurity entry it returns the
// defaults. Errors name the file and the field.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admission configuration %s: %w", path, err)
	}
	var ac admissionConfiguration
	if err := strictYAML(data, &ac); err != nil {
		return nil, fmt.Errorf("admission configuration %s: %w", path, err)
	}
	if ac.Kind != "AdmissionConfiguration" || !slices.Contains(admissionConfigVersions, ac.APIVersion) {
		return nil, fmt.Errorf("admission configuration %s: apiVersion %q kind %q: want AdmissionConfiguration of %s",
			path, ac.APIVersion, ac.Kind, strings.Join(admissionConfigVersions, ", "))
	}
	for i, pl := range ac.Plugins {
		if pl.Name != "PodSecurity" {
			continue
		}
		file, raw := path, []byte(pl.Configuration)
		where := fmt.Sprintf("plugins[%d].configuration", i)
		if len(raw) == 0 || string(raw) == "null" {
			if pl.Path == "" {
				return &Config{}, nil
			}
			file = pl.Path
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(path), file)
			}
			if raw, err = os.ReadFile(file); err != nil {
				return nil, fmt.Errorf("admission configuration %s: plugins[%d].path: %w", path, i, err)
			}
			where = ""
		}
		c, err := parseConfig(raw)
		if err != nil {
			if where != "" {
				return nil, fmt.Errorf("admission configuration %s: %s: %w", file, where, err)
			}
			return nil, fmt.Errorf("PodSecurity configuration %s: %w", file, err)
		}
		return c, nil
	}
	return &Config{}, nil
}

func parseConfig(raw []byte) (*Config, error) {
	var pc podSecurityConfiguration
	if err := strictYAML(raw, &pc); err != nil {
		return nil, err
	}
	if pc.Kind != "PodSecurityConfiguration" || !slices.Contains(podSecurityVersions, pc.APIVersion) {
		return nil, fmt.Errorf("apiVersion %q kind %q: want PodSecurityConfiguration of %s",
			pc.APIVersion, pc.Kind, strings.Join(podSecurityVersions, ", "))
	}
	c := &pc.Config
	if errs := validateConfig(c); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return c, nil
}

// strictYAML decodes YAML or JSON, refusing fields it does not know so
// that a misspelt one is not silently ignored.
func strictYAML(data []byte, into any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// validateConfig checks the configuration as upstream, after filling in
// the defaults (privileged, latest) of what it leaves out.
func validateConfig(c *Config) field.ErrorList {
	d := &c.Defaults
	var errs field.ErrorList
	defaults := field.NewPath("defaults")
	for _, m := range []struct {
		level, version *string
		name           string
	}{{&d.Enforce, &d.EnforceVersion, "enforce"}, {&d.Warn, &d.WarnVersion, "warn"}, {&d.Audit, &d.AuditVersion, "audit"}} {
		lv := defaulted(*m.level, *m.version)
		*m.level, *m.version = lv.level, lv.version
		if *m.level != Privileged && *m.level != Baseline && *m.level != Restricted {
			errs = append(errs, field.Invalid(defaults.Child(m.name), *m.level, `must be one of privileged, baseline, restricted`))
		}
		if !validVersion(*m.version) {
			errs = append(errs, field.Invalid(defaults.Child(m.name+"-version"), *m.version, `must be "latest" or "v1.x"`))
		}
	}
	exemptions := field.NewPath("exemptions")
	unique := func(p *field.Path, values []string, check func(string) []string) {
		seen := map[string]bool{}
		for i, v := range values {
			if msgs := check(v); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Index(i), v, strings.Join(msgs, ", ")))
				continue
			}
			if seen[v] {
				errs = append(errs, field.Duplicate(p.Index(i), v))
			}
			seen[v] = true
		}
	}
	unique(exemptions.Child("namespaces"), c.Exemptions.Namespaces, func(s string) []string { return apivalidation.ValidateNamespaceName(s, false) })
	unique(exemptions.Child("runtimeClasses"), c.Exemptions.RuntimeClasses, func(s string) []string { return apivalidation.NameIsDNSSubdomain(s, false) })
	unique(exemptions.Child("usernames"), c.Exemptions.Usernames, func(s string) []string {
		if strings.TrimSpace(s) == "" {
			return []string{"username must not be empty"}
		}
		return nil
	})
	return errs
}
