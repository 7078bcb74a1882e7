package allocation

import "testing"

// BenchmarkPlanCyclePetabyte plans one cycle at 750 nodes, 100,000 copies of 20 GiB and 20 hot
// nodes. The target is under 1 s a cycle.
func BenchmarkPlanCyclePetabyte(b *testing.B) { benchPlanCycle(b, petabyte, 20) }

// BenchmarkPlanCyclePetabyteQuiet plans one cycle at the same scale with nothing hot.
func BenchmarkPlanCyclePetabyteQuiet(b *testing.B) { benchPlanCycle(b, petabyte, 0) }
