package deploy

import "testing"

// DomainResources resolves a rendered statement's Resource as CloudFormation would with
// OpenSearchDomainArns set to arns, for the package's external tests.
func DomainResources(t *testing.T, resource any, arns []string) []string {
	t.Helper()
	return domainEval{t: t, arns: arns}.resources(resource)
}
