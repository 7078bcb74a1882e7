package duration

import "fmt"

// InRange returns an error naming the bounds when d is outside [lo, hi]. Config validation uses
// it so that a duration that parses ("1ns", "2562047h") but means nothing useful is refused
// before any arithmetic on it can overflow.
func InRange(d, lo, hi Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%v must be between %v and %v", d, lo, hi)
	}
	return nil
}
