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

// Sign returns the HeaderTimestamp and HeaderSignature values for body sent at t: what a sender
// that cannot sign SigV4 computes. The signature is HMAC-SHA256 with secret over the timestamp,
// a ".", and the body exactly as sent, so a replayed body cannot be given a new timestamp.
func Sign(secret, body []byte, t time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(t.Unix(), 10)
	return timestamp, signaturePrefix + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// ParseSignature reads a HeaderSignature value: "sha256=" and 64 hex digits (either case).
func ParseSignature(v string) ([]byte, error) {
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

// ParseTimestamp reads a HeaderTimestamp value: Unix seconds in decimal digits, nothing else (no
// sign, no fraction), so that one instant has one spelling.
func ParseTimestamp(v string) (time.Time, error) {
	if v == "" || len(v) > maxTimestampDigits || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("%s: %q is not Unix seconds (1 to %d decimal digits)", HeaderTimestamp, v, maxTimestampDigits)
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", HeaderTimestamp, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// Verify checks an HMAC-signed request: the signature must be secret's over timestamp + "." +
// body, and the timestamp within MaxClockSkew of now either way. Every error wraps
// ErrUnauthenticated. The signature is compared in constant time and checked before the
// timestamp, so only a holder of the secret learns that its clock is off.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time) error {
	if timestamp == "" || signature == "" {
		return fmt.Errorf("%w: request is not signed: SigV4 through the AWS_IAM URL, or %s and %s headers", ErrUnauthenticated, HeaderTimestamp, HeaderSignature)
	}
	at, err := ParseTimestamp(timestamp)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	sum, err := ParseSignature(signature)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if !hmac.Equal(sum, mac(secret, timestamp, body)) {
		return fmt.Errorf("%w: signature does not match", ErrUnauthenticated)
	}
	if skew := now.Sub(at); skew > MaxClockSkew || skew < -MaxClockSkew {
		return fmt.Errorf("%w: timestamp %s is %s from now, more than %s: a replay or a wrong clock",
			ErrUnauthenticated, at.Format(time.RFC3339), skew.Round(time.Second), MaxClockSkew)
	}
	return nil
}
