package authn

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/kube-lite/kube-lite/pkg/apiserver/request"
	"github.com/kube-lite/kube-lite/pkg/pki"
)

// ServiceAccountUserPrefix starts a service account's user name:
// system:serviceaccount:<namespace>:<name>.
const ServiceAccountUserPrefix = "system:serviceaccount:"

// ServiceAccountUser is the identity of a service account.
func ServiceAccountUser(ns, name, uid string) *request.User {
	return &request.User{
		Name:   ServiceAccountUserPrefix + ns + ":" + name,
		UID:    uid,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
	}
}

// Claims are the claims of a bound service-account token, as upstream's.
type Claims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	Audience  []string `json:"aud"`
	Expiry    int64    `json:"exp"`
	NotBefore int64    `json:"nbf"`
	IssuedAt  int64    `json:"iat"`
	ID        string   `json:"jti,omitempty"`
	Private   Private  `json:"kubernetes.io"`
}

// Private are the Kubernetes claims: who the token is for and what it is bound to.
type Private struct {
	Namespace      string     `json:"namespace"`
	ServiceAccount ObjectRef  `json:"serviceaccount"`
	Pod            *ObjectRef `json:"pod,omitempty"`
	Secret         *ObjectRef `json:"secret,omitempty"`
	// WarnAfter (Unix seconds) is when a token issued for longer than asked
	// (extended expiry) should have been replaced, as upstream's.
	WarnAfter int64 `json:"warnafter,omitempty"`
}

// ObjectRef names a bound object.
type ObjectRef struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// TokenRequest says what token to issue.
type TokenRequest struct {
	Namespace      string
	ServiceAccount ObjectRef
	Pod, Secret    *ObjectRef
	// Audiences default to the signer's issuer.
	Audiences []string
	// Lifetime defaults to one hour.
	Lifetime time.Duration
	// WarnAfter, when set, is the lifetime the client asked for, shorter
	// than Lifetime: the token says when that ends (extended expiry).
	WarnAfter time.Duration
}

// Signer issues service-account tokens (RS256 JWTs).
type Signer struct {
	Key    *rsa.PrivateKey
	Issuer string
	Clock  clock.PassiveClock
}

// Issue signs a token; it returns the token and its expiry.
func (s *Signer) Issue(req TokenRequest) (string, time.Time, error) {
	now := time.Now()
	if s.Clock != nil {
		now = s.Clock.Now()
	}
	life := req.Lifetime
	if life <= 0 {
		life = time.Hour
	}
	aud := req.Audiences
	if len(aud) == 0 {
		aud = []string{s.Issuer}
	}
	exp := now.Add(life)
	c := Claims{
		Issuer: s.Issuer, Subject: ServiceAccountUserPrefix + req.Namespace + ":" + req.ServiceAccount.Name,
		Audience: aud, Expiry: exp.Unix(), NotBefore: now.Unix(), IssuedAt: now.Unix(), ID: string(uuid.NewUUID()),
		Private: Private{Namespace: req.Namespace, ServiceAccount: req.ServiceAccount, Pod: req.Pod, Secret: req.Secret},
	}
	if req.WarnAfter > 0 {
		c.Private.WarnAfter = now.Add(req.WarnAfter).Unix()
	}
	tok, err := SignJWT(s.Key, c)
	return tok, exp, err
}

type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid,omitempty"`
}

// KeyID is the "kid" of a public key: the unpadded base64url SHA-256 of
// its DER form, as upstream computes it.
func KeyID(pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// SignJWT signs claims with key (RS256).
func SignJWT(key *rsa.PrivateKey, claims any) (string, error) {
	h, err := json.Marshal(jwtHeader{Alg: "RS256", Kid: KeyID(&key.PublicKey)})
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signing := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// parseJWT splits a compact JWS and decodes its payload, without checking
// the signature.
func parseJWT(token string, claims any) (hdr jwtHeader, signing string, sig []byte, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return hdr, "", nil, errors.New("not a JWT")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &hdr) != nil {
		return hdr, "", nil, errors.New("malformed JWT header")
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(pb, claims) != nil {
		return hdr, "", nil, errors.New("malformed JWT claims")
	}
	if sig, err = base64.RawURLEncoding.DecodeString(parts[2]); err != nil {
		return hdr, "", nil, errors.New("malformed JWT signature")
	}
	return hdr, parts[0] + "." + parts[1], sig, nil
}

// BoundObjects reads the objects a token is bound to. Each returns the
// object's UID, or found false when it is gone.
type BoundObjects interface {
	ServiceAccountUID(ctx context.Context, ns, name string) (uid string, found bool, err error)
	PodUID(ctx context.Context, ns, name string) (uid string, found bool, err error)
	SecretUID(ctx context.Context, ns, name string) (uid string, found bool, err error)
}

// ServiceAccountTokens verifies service-account JWTs: signature by one of
// Keys, issuer, audience, time window, and that the service account (and
// the pod or secret the token is bound to) still exists with the UID the
// token names. Tokens from another issuer are not its business (ok false,
// no error), so another authenticator may take them.
type ServiceAccountTokens struct {
	Keys      []*rsa.PublicKey
	Issuers   []string
	Audiences []string
	Objects   BoundObjects
	Clock     clock.PassiveClock
}

// AuthenticateToken implements Token.
func (a *ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	var c Claims
	hdr, signing, sig, err := parseJWT(token, &c)
	if err != nil || !slices.Contains(a.Issuers, c.Issuer) {
		return nil, false, nil
	}
	if hdr.Alg != "RS256" {
		return nil, false, fmt.Errorf("service account token: unsupported algorithm %q", hdr.Alg)
	}
	sum := sha256.Sum256([]byte(signing))
	verified := false
	for _, k := range a.Keys {
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, false, errors.New("service account token: invalid signature")
	}
	now := time.Now()
	if a.Clock != nil {
		now = a.Clock.Now()
	}
	// A minute of leeway for clocks of other machines, as upstream.
	const leeway = 60
	switch {
	case c.Expiry == 0 || now.Unix() > c.Expiry+leeway:
		return nil, false, errors.New("service account token has expired")
	case c.NotBefore != 0 && now.Unix()+leeway < c.NotBefore:
		return nil, false, errors.New("service account token is not valid yet")
	}
	if !slices.ContainsFunc(c.Audience, func(s string) bool { return slices.Contains(a.Audiences, s) }) {
		return nil, false, errors.New("service account token: audience not accepted")
	}
	p := c.Private
	if p.Namespace == "" || p.ServiceAccount.Name == "" || c.Subject != ServiceAccountUserPrefix+p.Namespace+":"+p.ServiceAccount.Name {
		return nil, false, errors.New("service account token: malformed subject")
	}
	if err := a.checkBound(ctx, "service account", p.Namespace, p.ServiceAccount, a.Objects.ServiceAccountUID); err != nil {
		return nil, false, err
	}
	u := ServiceAccountUser(p.Namespace, p.ServiceAccount.Name, p.ServiceAccount.UID)
	if p.Pod != nil {
		if err := a.checkBound(ctx, "pod", p.Namespace, *p.Pod, a.Objects.PodUID); err != nil {
			return nil, false, err
		}
		u.Extra = map[string][]string{
			"authentication.kubernetes.io/pod-name": {p.Pod.Name},
			"authentication.kubernetes.io/pod-uid":  {p.Pod.UID},
		}
	}
	if p.Secret != nil {
		if err := a.checkBound(ctx, "secret", p.Namespace, *p.Secret, a.Objects.SecretUID); err != nil {
			return nil, false, err
		}
	}
	if c.ID != "" {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra["authentication.kubernetes.io/credential-id"] = []string{"JTI=" + c.ID}
	}
	return u, true, nil
}

func (a *ServiceAccountTokens) checkBound(ctx context.Context, what, ns string, ref ObjectRef,
	get func(ctx context.Context, ns, name string) (string, bool, error)) error {
	uid, found, err := get(ctx, ns, ref.Name)
	switch {
	case err != nil:
		return fmt.Errorf("service account token: looking up %s %s/%s: %w", what, ns, ref.Name, err)
	case !found:
		return fmt.Errorf("service account token: %s %s/%s has been deleted", what, ns, ref.Name)
	case ref.UID != "" && uid != ref.UID:
		return fmt.Errorf("service account token: %s %s/%s has been recreated (UID %s, token names %s)", what, ns, ref.Name, uid, ref.UID)
	}
	return nil
}

// LoadPublicKeys reads RSA public keys from PEM files holding public keys,
// certificates or private keys (upstream's --service-account-key-file).
func LoadPublicKeys(paths ...string) ([]*rsa.PublicKey, error) {
	var keys []*rsa.PublicKey
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("service account key: %w", err)
		}
		n := len(keys)
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			var pub any
			switch b.Type {
			case "PUBLIC KEY":
				pub, err = x509.ParsePKIXPublicKey(b.Bytes)
			case "RSA PUBLIC KEY":
				pub, err = x509.ParsePKCS1PublicKey(b.Bytes)
			case "CERTIFICATE":
				var c *x509.Certificate
				if c, err = x509.ParseCertificate(b.Bytes); err == nil {
					pub = c.PublicKey
				}
			default:
				var k crypto.Signer
				if k, err = pki.ParseKeyPEM(pem.EncodeToMemory(b)); err == nil {
					pub = k.Public()
				}
			}
			if err != nil {
				return nil, fmt.Errorf("service account key %s: %w", p, err)
			}
			if rk, ok := pub.(*rsa.PublicKey); ok {
				keys = append(keys, rk)
			}
		}
		if len(keys) == n {
			return nil, fmt.Errorf("service account key %s: no RSA key found", p)
		}
	}
	return keys, nil
}

// LoadSigningKey reads the RSA private key that signs tokens.
func LoadSigningKey(path string) (*rsa.PrivateKey, error) {
	k, err := pki.LoadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("service account signing key %s: %T, want RSA", path, k)
	}
	return rk, nil
}
