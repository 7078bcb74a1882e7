package deploy

import (
	"regexp"
	"testing"
)

// Slot i's alarm watches SandboxOverLimit of the cluster and sandbox its entry names, every minute
// of sandboxAlarmMinutes, created only when the entry is there; the parameter takes at most
// sandboxAlarmSlots cluster/sandbox entries.
func TestSandboxAlarms(t *testing.T) {
	doc := render(t, Options{})
	for i := range sandboxAlarmSlots {
		a := get(t, doc, "Resources", sandboxAlarmID(i))
		if c := get(t, a, "Condition"); c != condSandboxAlarm(i) {
			t.Errorf("slot %d condition %v", i+1, c)
		}
		p := get(t, a, "Properties")
		if get(t, p, "MetricName") != "SandboxOverLimit" || get(t, p, "Statistic") != "Maximum" ||
			get(t, p, "EvaluationPeriods") != float64(sandboxAlarmMinutes) || get(t, p, "DatapointsToAlarm") != float64(sandboxAlarmMinutes) {
			t.Errorf("slot %d alarm %v", i+1, p)
		}
	}
	re := regexp.MustCompile(sandboxAlarmsPattern)
	for entry, ok := range map[string]bool{
		"": true, "prod/flood": true, "prod/flood,prod/reports,a/b,c/d,e/f": true,
		"prod/flood,prod/reports,a/b,c/d,e/f,g/h": false, "prod": false, "prod/flood, prod/x": false,
	} {
		if re.MatchString(entry) != ok {
			t.Errorf("SandboxAlarms %q: accepted %v, want %v", entry, !ok, ok)
		}
	}
}
