package selection

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

func TestAddFlags(t *testing.T) {
	tests := []struct {
		name          string
		recursive     bool
		args          []string
		wantFiles     []string
		wantSelector  string
		wantRecursive bool
		wantErr       bool
	}{
		{name: "files and selector", args: []string{"-f", "a.yaml", "-f", "b.yaml", "-l", "app=x"},
			wantFiles: []string{"a.yaml", "b.yaml"}, wantSelector: "app=x"},
		{name: "recursive where offered", recursive: true, args: []string{"-R", "-f", "dir"},
			wantFiles: []string{"dir"}, wantRecursive: true},
		{name: "no -R where not offered", args: []string{"-R"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Flags
			cmd := &cobra.Command{}
			s.AddFlags(cmd, "Files", tt.recursive)
			err := cmd.ParseFlags(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseFlags error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got := s.Filenames.Filenames; !slices.Equal(got, tt.wantFiles) {
				t.Errorf("Filenames = %v, want %v", got, tt.wantFiles)
			}
			if s.LabelSelector != tt.wantSelector {
				t.Errorf("LabelSelector = %q, want %q", s.LabelSelector, tt.wantSelector)
			}
			if s.Filenames.Recursive != tt.wantRecursive {
				t.Errorf("Recursive = %v, want %v", s.Filenames.Recursive, tt.wantRecursive)
			}
			if s.NoFiles() != (len(tt.wantFiles) == 0) {
				t.Errorf("NoFiles = %v with files %v", s.NoFiles(), tt.wantFiles)
			}
		})
	}
}
