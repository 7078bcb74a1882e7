package deploy

import (
	"fmt"
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
		// It notifies people, through the topic whose policy admits it by name.
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if got, ok := get(t, p, k).([]any); !ok || len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(map[string]any{"Ref": alertTopicID}) {
				t.Errorf("slot %d %s: %v, want the alert topic", i+1, k, get(t, p, k))
			}
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
