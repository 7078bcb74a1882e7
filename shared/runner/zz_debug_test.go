package runner

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

func TestZZDump(t *testing.T) {
	seed, _ := strconv.Atoi(os.Getenv("ZZSEED"))
	if seed == 0 {
		t.Skip()
	}
	sc, _, err := randomScenario(uint64(seed))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sim.New(sc, sim.Options{})
	var rep sim.TickReport
	for s.ElapsedSeconds() < randomStepAt+sc.TickSeconds-1e-9 {
		rep = s.Step()
	}
	rate, speed := sc.Cluster.RecoveryBytesPerSecond, replaySpeed(sc)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	for _, nt := range rep.Nodes {
		n := s.MatchNodes([]string{nt.Name})
		fmt.Printf("%s load %.2f threads %d\n", nt.Name, nt.WriteLoad, nt.WriteThreads)
		for ix, c := range s.CopiesOn(n[0]) {
			files := float64(ix.ShardBytes) / rate
			fmt.Printf("   %s[%d] p=%v demand %.2f files %.0fs total %.0fs active %v\n", ix.Name, c.Sh.Num, c.Primary, c.WriteDemand, files, files*(1+c.WriteDemand/speed), c.Active())
		}
	}
}
