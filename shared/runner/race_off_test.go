//go:build !race

package runner

// raceDetector: see race_on_test.go.
const raceDetector = false
