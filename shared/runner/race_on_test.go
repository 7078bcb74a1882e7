//go:build race

package runner

// raceDetector: this test binary runs with the race detector, which slows the simulator about
// tenfold. The whole-scenario property suites then skip; `make properties` runs them without it.
const raceDetector = true
