package deploy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
)

// One stack watches every cluster of its configuration, and the clusters that are Amazon
// OpenSearch Service domains may be several: OpenSearchDomainArns lists their ARNs, and each
// function's role is granted its requests on every one of them. Plain CloudFormation has no loop
// (see alarms.go), so the list has domainSlots slots, each granted under its own condition; the
// parameter's AllowedPattern refuses a longer list before anything is created or changed.
const (
	// domainSlots is how many domains one stack may grant. IAM's quota on a role's inline
	// policies, 10,240 characters in all, sets it: the sandbox function sends the most distinct
	// requests (20 paths), and with four ARNs of the longest name every role stays inside it,
	// with five not (TestDomainPoliciesFitIAM). More domains take another stack.
	domainSlots = 4

	// domainARN is one Amazon OpenSearch Service domain's ARN (any partition; a domain name is 3
	// to 28 characters of a-z, 0-9 and "-", starting with a letter). OpenSearch Serverless
	// collections (arn:aws:aoss:...) are not accepted: they serve neither _nodes/stats nor
	// _cluster/reroute.
	domainARN = `arn:aws[a-z-]*:es:[a-z0-9-]+:[0-9]{12}:domain/[a-z][a-z0-9-]{2,27}`
)

// domainsPattern is OpenSearchDomainArns' AllowedPattern: empty, or 1 to domainSlots ARNs
// separated by commas. The parameter is a String, not a CommaDelimitedList, for the reason
// alarmClustersPattern gives: a list's pattern applies to each entry apart, and then nothing can
// count them.
var domainsPattern = fmt.Sprintf(`^$|^%s(,%s){0,%d}$`, domainARN, domainARN, domainSlots-1)

func condDomain(i int) string { return "HasOpenSearchDomain" + strconv.Itoa(i+1) }

// domainSlotARN is slot i's ARN, empty when the list is shorter.
func domainSlotARN(i int) string {
	return cloudformation.Select(strconv.Itoa(i), cloudformation.Split(",", cloudformation.Join(",", []string{
		cloudformation.Ref(paramDomain),
		strings.Repeat(",", domainSlots-1),
	})))
}

func domainParameter() cloudformation.Parameter {
	return cloudformation.Parameter{
		Type: "String",
		// Empty for clusters outside Amazon OpenSearch Service (basic or no auth): then no
		// OpenSearch permission is granted at all.
		Default:        "",
		AllowedPattern: cloudformation.String(domainsPattern),
		ConstraintDescription: cloudformation.String(fmt.Sprintf("OpenSearchDomainArns takes at most %d Amazon "+
			"OpenSearch Service domain ARNs (arn:aws:es:<region>:<account>:domain/<name>), comma-separated without "+
			"spaces; OpenSearch Serverless collections are not supported", domainSlots)),
		Description: cloudformation.String(fmt.Sprintf("ARNs of the Amazon OpenSearch Service domains the functions "+
			"may call, comma-separated without spaces, at most %d: each function's role is granted its requests on "+
			"every one. Empty when no cluster is on AWS (OpenSearch Serverless is not supported)", domainSlots)),
	}
}

// domainConditions are HasOpenSearchDomain (any domain at all) and one condition per slot.
func domainConditions() map[string]any {
	out := map[string]any{
		condHasDomain: cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramDomain), "")}),
	}
	for i := range domainSlots {
		out[condDomain(i)] = cloudformation.Not([]string{cloudformation.Equals(domainSlotARN(i), "")})
	}
	return out
}

// domainResources are the ARNs of path p on every domain of the list: one entry per slot, which
// CloudFormation drops (AWS::NoValue) where the slot is empty.
func domainResources(p string) []string {
	out := make([]string, 0, domainSlots)
	for i := range domainSlots {
		out = append(out, cloudformation.If(condDomain(i),
			cloudformation.Join("/", []string{domainSlotARN(i), p}),
			cloudformation.Ref("AWS::NoValue")))
	}
	return out
}
