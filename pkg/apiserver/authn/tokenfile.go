package authn

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
)

// TokenFile holds static bearer tokens, read once from a CSV file in
// upstream's --token-auth-file format: token,user,uid[,"group1,group2"].
type TokenFile struct {
	tokens map[string]*request.User
}

// LoadTokenFile reads a token file.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	tf, err := ParseTokenCSV(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return tf, nil
}

// ParseTokenCSV parses token file contents. Blank lines and lines starting
// with # are skipped.
func ParseTokenCSV(r io.Reader) (*TokenFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	tf := &TokenFile{tokens: map[string]*request.User{}}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: want token,user,uid[,groups], got %d fields", line, len(rec))
		}
		token, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if token == "" || name == "" {
			return nil, fmt.Errorf("line %d: empty token or user", line)
		}
		if _, dup := tf.tokens[token]; dup {
			return nil, fmt.Errorf("line %d: duplicate token", line)
		}
		u := &request.User{Name: name, UID: strings.TrimSpace(rec[2])}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tf.tokens[token] = u
	}
	return tf, nil
}

// AuthenticateToken implements Token.
func (tf *TokenFile) AuthenticateToken(_ context.Context, token string) (*request.User, bool, error) {
	for t, u := range tf.tokens {
		// Constant-time, so response times do not reveal token prefixes.
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			c := *u
			return &c, true, nil
		}
	}
	return nil, false, nil
}
