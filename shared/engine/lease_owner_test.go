package engine

import (
	"strings"
	"testing"
)

// TestLeaseReleaseOwnedByHolder: holder A runs past its lease, B takes it; A's late release and
// renewal leave B's lease alone, so C cannot take it while B holds it.
func TestLeaseReleaseOwnedByHolder(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	a, err := r.e.takeLease(t.Context(), "prod", "A")
	if err != nil {
		t.Fatal(err)
	}
	w.wait(leaseTTL + leaseClockSkew)
	b, err := r.e.takeLease(t.Context(), "prod", "B")
	if err != nil {
		t.Fatalf("B after A's expiry: %v", err)
	}
	if err := a.Renew(t.Context()); err == nil {
		t.Fatal("A renewed a lease B holds")
	}
	a.Release()
	if _, err := r.e.takeLease(t.Context(), "prod", "C"); err == nil || !strings.Contains(err.Error(), "(B,") {
		t.Fatalf("C while B holds the lease: got %v, want it held by B", err)
	}
	if err := b.Renew(t.Context()); err != nil {
		t.Fatalf("B renewing its own lease: %v", err)
	}
	b.Release()
	c, err := r.e.takeLease(t.Context(), "prod", "C")
	if err != nil {
		t.Fatalf("C after B released: %v", err)
	}
	c.Release()
}

// TestLeaseClockSkew: a lease is not taken over until its expiry plus the clock skew allowed
// between invocations has passed.
func TestLeaseClockSkew(t *testing.T) {
	w := hotWorld()
	r := newRig(t, liveConfig("reroute"), map[string]*world{"prod": w})
	if _, err := r.e.takeLease(t.Context(), "prod", "A"); err != nil {
		t.Fatal(err)
	}
	w.wait(leaseTTL)
	if _, err := r.e.takeLease(t.Context(), "prod", "B"); err == nil {
		t.Fatal("B took A's lease at its expiry, within the clock skew")
	}
	w.wait(leaseClockSkew)
	if _, err := r.e.takeLease(t.Context(), "prod", "B"); err != nil {
		t.Fatalf("B after expiry and skew: %v", err)
	}
}
