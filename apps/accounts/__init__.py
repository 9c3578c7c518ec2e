"""Accounts: who may do what (operators, tenants' members), API tokens, rate limits.

Operators are staff accounts (`apps.accounts.roles.is_operator`), as before
tenants existed. Everyone else is a member of one tenant, as `tenant_admin` or
`member`. Operators make tenants, give them clusters and manage anyone; a
tenant admin adds (new accounts only), re-roles and removes its tenant's
members and revokes their tokens; everyone manages their own tokens.
Operator-only is the default in both doors, so a new endpoint is safe before
anyone thinks about it: the API's `DEFAULT_PERMISSION_CLASSES` is `IsOperator`
(a member gets 403 in the API's error shape), and `OperatorOnlyMiddleware`
refuses every page to a signed-in non-operator (403) unless its view is marked
`@members_allowed`. A view or viewset opened to members scopes its own queryset
(`services.visible_tenants`, `accounts.services.visible_to`,
`audit.services.visible_to`), so another tenant's object is simply not found:
404. A token authenticates as its owner and so carries exactly its owner's
rights; a revoked or expired one is a 401. tests/accounts/test_authorization.py
walks every route of the URL conf with every method as a member and as a tenant
admin, with ids of real objects (another tenant's where the object has a
tenant), and fails on any 2xx outside the few member pages.
"""
