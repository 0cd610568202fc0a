package template

// Rules returns every rule name the lint can report, in a fixed order. The
// tests hold the lint and doc.go to it.
func Rules() []string {
	return []string{
		RuleTooManyEntries, RuleHeaderName, RuleQueryName, RuleReservedHeader,
		RuleDuplicateHeader, RuleReservedFieldKey, RuleTooLong, RuleNonPrintable,
		RuleWhitespace, RuleStrayClose, RuleUnclosed, RuleEmptyPlaceholder,
		RuleUnterminatedLiteral, RuleBadEscape, RuleSyntax, RuleUnknownIdentifier,
		RuleUnknownHelper, RuleArity, RuleNestedCall, RuleCDPJWTArgument,
	}
}
