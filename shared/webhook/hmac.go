package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// signaturePrefix names the algorithm in HeaderSignature, as GitHub's X-Hub-Signature-256 does, so
// another can be added without ambiguity.
const signaturePrefix = "sha256="

// maxTimestampDigits bounds HeaderTimestamp: 11 digits of Unix seconds reach the year 5138.
const maxTimestampDigits = 11

// Message is what an HMAC signature covers besides its timestamp: the request's method, its path
// as sent (without the query string), its HeaderCluster value ("" when there is none) and its body
// as sent. Signing the method, path and cluster stops a captured body from being sent to another
// webhook or another cluster.
type Message struct {
	Method  string
	Path    string
	Cluster string
	Body    []byte
}

// Sign returns the HeaderTimestamp and HeaderSignature values for m sent at t: what a sender that
// cannot sign SigV4 computes. The signature is HMAC-SHA256 with secret over the signing string
//
//	timestamp "\n" method "\n" path "\n" cluster "\n" body
//
// so a replayed request cannot be given a new timestamp, path or cluster.
func Sign(secret []byte, m Message, t time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(t.Unix(), 10)
	return timestamp, signaturePrefix + hex.EncodeToString(mac(secret, timestamp, m))
}

func mac(secret []byte, timestamp string, m Message) []byte {
	h := hmac.New(sha256.New, secret)
	for _, field := range []string{timestamp, m.Method, m.Path, m.Cluster} {
		h.Write([]byte(field))
		h.Write([]byte{'\n'})
	}
	h.Write(m.Body)
	return h.Sum(nil)
}

// parseSignature reads a HeaderSignature value: "sha256=" and 64 hex digits (either case).
func parseSignature(v string) ([]byte, error) {
	hexSum, ok := strings.CutPrefix(v, signaturePrefix)
	if !ok {
		return nil, fmt.Errorf("%s: want %s followed by 64 hex digits", HeaderSignature, signaturePrefix)
	}
	if len(hexSum) != 2*sha256.Size {
		return nil, fmt.Errorf("%s: %d hex digits, want %d", HeaderSignature, len(hexSum), 2*sha256.Size)
	}
	sum, err := hex.DecodeString(hexSum)
	if err != nil {
		return nil, fmt.Errorf("%s: not hex: %w", HeaderSignature, err)
	}
	return sum, nil
}

// parseTimestamp reads a HeaderTimestamp value: Unix seconds in decimal digits, nothing else (no
// sign, no fraction), so that one instant has one spelling.
func parseTimestamp(v string) (time.Time, error) {
	if v == "" || len(v) > maxTimestampDigits || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("%s: %q is not Unix seconds (1 to %d decimal digits)", HeaderTimestamp, v, maxTimestampDigits)
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", HeaderTimestamp, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// verify checks an HMAC-signed request: the signature must be secret's over the signing string of
// timestamp and m (see Sign), and the timestamp within MaxClockSkew of now either way. It returns
// the signed time and the signature's sum, by which a replay is recognized. Every error wraps
// errUnauthenticated. The signature is compared in constant time and checked before the
// timestamp, so only a holder of the secret learns that its clock is off.
func verify(secret []byte, timestamp, signature string, m Message, now time.Time) (time.Time, []byte, error) {
	if timestamp == "" || signature == "" {
		return time.Time{}, nil, fmt.Errorf("%w: request is not signed: SigV4 through the AWS_IAM URL, or %s and %s headers", errUnauthenticated, HeaderTimestamp, HeaderSignature)
	}
	for _, field := range []string{m.Method, m.Path, m.Cluster} {
		// A line break would let one signing string stand for two different requests.
		if strings.ContainsAny(field, "\r\n") {
			return time.Time{}, nil, fmt.Errorf("%w: method, path or %s holds a line break", errUnauthenticated, HeaderCluster)
		}
	}
	at, err := parseTimestamp(timestamp)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	sum, err := parseSignature(signature)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	if !hmac.Equal(sum, mac(secret, timestamp, m)) {
		return time.Time{}, nil, fmt.Errorf("%w: signature does not match", errUnauthenticated)
	}
	if skew := now.Sub(at); skew > MaxClockSkew || skew < -MaxClockSkew {
		return time.Time{}, nil, fmt.Errorf("%w: timestamp %s is %s from now, more than %s: a replay or a wrong clock",
			errUnauthenticated, at.Format(time.RFC3339), skew.Round(time.Second), MaxClockSkew)
	}
	return at, sum, nil
}
