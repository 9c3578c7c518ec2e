from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from rest_framework.routers import DefaultRouter

from apps.accounts.api import TokenViewSet
from apps.alerts import api as alerts_api
from apps.api.docs import ApiSchemaView, api_docs
from apps.audit.api import AuditEventViewSet
from apps.benchmarks.api import BenchmarkViewSet, ValidationViewSet
from apps.clones.api import CloneViewSet, ClusterSnapshotsView, HostCloneSettingsView
from apps.drills.api import (
    ClusterRecoverTableView,
    DrillRunViewSet,
    DrillScheduleViewSet,
    HostReconcileView,
    SnapshotRecoverTableView,
)
from apps.events import api as events_api
from apps.experiments.api import ExperimentViewSet, ScriptViewSet
from apps.fleet.api import HostPoolReservesView, HostPoolReserveView, HostViewSet
from apps.ops.api import OperationViewSet
from apps.provisioning import api as provisioning_api
from apps.replication.api import ReplicationLinkViewSet
from apps.rollouts.api import RolloutViewSet
from apps.snapshots.api import (
    HostSnapshotsView,
    PolicyAssignmentViewSet,
    SnapshotPolicyViewSet,
    SnapshotViewSet,
)
from apps.telemetry import scrape
from apps.telemetry.api import HostTelemetryView
from apps.tenants.api import (
    ClusterAssignmentViewSet,
    MembershipViewSet,
    TenantViewSet,
)
from apps.tuning import api as tuning_api
from apps.wal.api import WalArchiveViewSet

api = DefaultRouter()
api.register("hosts", HostViewSet, basename="host")
api.register("operations", OperationViewSet, basename="operation")
api.register("profiles", tuning_api.ProfileViewSet, basename="profile")
api.register("plans", tuning_api.PlanViewSet, basename="plan")
api.register("benchmarks", BenchmarkViewSet, basename="benchmark")
api.register("validations", ValidationViewSet, basename="validation")
api.register("snapshots", SnapshotViewSet, basename="snapshot")
api.register("snapshot-policies", SnapshotPolicyViewSet, basename="snapshot-policy")
api.register("policy-assignments", PolicyAssignmentViewSet, basename="policy-assignment")
api.register("replication-links", ReplicationLinkViewSet, basename="replication-link")
api.register("clones", CloneViewSet, basename="clone")
api.register("drill-schedules", DrillScheduleViewSet, basename="drill-schedule")
api.register("drills", DrillRunViewSet, basename="drill")
api.register("tenants", TenantViewSet, basename="tenant")
api.register("memberships", MembershipViewSet, basename="membership")
api.register("cluster-assignments", ClusterAssignmentViewSet, basename="cluster-assignment")
api.register("tokens", TokenViewSet, basename="token")
api.register("audit-events", AuditEventViewSet, basename="audit-event")
api.register("experiments", ExperimentViewSet, basename="experiment")
api.register("experiment-scripts", ScriptViewSet, basename="experiment-script")
api.register("alerts", alerts_api.AlertViewSet, basename="alert")
api.register("alert-rules", alerts_api.RuleViewSet, basename="alert-rule")
api.register("alert-channels", alerts_api.ChannelViewSet, basename="alert-channel")
api.register("alert-silences", alerts_api.SilenceViewSet, basename="alert-silence")
api.register("alert-deliveries", alerts_api.DeliveryViewSet, basename="alert-delivery")
api.register("wal-archives", WalArchiveViewSet, basename="wal-archive")
api.register("scrub-schedules", alerts_api.ScrubScheduleViewSet, basename="scrub-schedule")
api.register("event-subscriptions", events_api.SubscriptionViewSet,
             basename="event-subscription")
api.register("events", events_api.EventViewSet, basename="event")
api.register("rollouts", RolloutViewSet, basename="rollout")
api.register("event-deliveries", events_api.DeliveryViewSet, basename="event-delivery")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", ApiSchemaView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("api/hosts/<int:pk>/profile/", tuning_api.HostProfileView.as_view()),
    path("api/hosts/<int:pk>/findings/", tuning_api.HostFindingsView.as_view()),
    path("api/hosts/<int:pk>/plan/", tuning_api.HostPlanView.as_view()),
    path("api/hosts/<int:pk>/snapshots/", HostSnapshotsView.as_view()),
    path("api/hosts/<int:pk>/clusters/", provisioning_api.HostClustersView.as_view()),
    path("api/hosts/<int:pk>/clusters/plan/", provisioning_api.HostClusterPlanView.as_view()),
    path("api/hosts/<int:pk>/retire-cluster/", provisioning_api.HostRetireClusterView.as_view()),
    path("api/hosts/<int:pk>/clone-settings/", HostCloneSettingsView.as_view()),
    path("api/hosts/<int:pk>/pool-reserves/", HostPoolReservesView.as_view()),
    path("api/hosts/<int:pk>/pool-reserves/<str:pool>/", HostPoolReserveView.as_view()),
    path("api/hosts/<int:pk>/reconcile/", HostReconcileView.as_view()),
    path("api/snapshots/<int:pk>/recover-table/", SnapshotRecoverTableView.as_view()),
    path("api/clusters/<int:pk>/recover-table/", ClusterRecoverTableView.as_view()),
    path("api/hosts/<int:pk>/telemetry/", HostTelemetryView.as_view()),
    path("api/cluster-assignments/<int:pk>/snapshots/", ClusterSnapshotsView.as_view()),
    path("api/event-kinds/", events_api.EventKindsView.as_view()),
    path("api/", include(api.urls)),
    path("metrics", scrape.metrics, name="metrics"),
    path("operations/", include("apps.ops.urls")),
    path("tuning/", include("apps.tuning.urls")),
    path("benchmarks/", include("apps.benchmarks.urls")),
    path("snapshots/", include("apps.snapshots.urls")),
    path("replication/", include("apps.replication.urls")),
    path("clones/", include("apps.clones.urls")),
    path("provisioning/", include("apps.provisioning.urls")),
    path("rollouts/", include("apps.rollouts.urls")),
    path("wal/", include("apps.wal.urls")),
    path("drills/", include("apps.drills.urls")),
    path("audit/", include("apps.audit.urls")),
    path("experiments/", include("apps.experiments.urls")),
    path("alerts/", include("apps.alerts.urls")),
    path("telemetry/", include("apps.telemetry.urls")),
    path("", include("apps.accounts.urls")),
    path("", include("apps.tenants.urls")),
    path("", include("apps.fleet.urls")),
]

handler400 = "apps.api.errors.bad_request"
handler403 = "apps.api.errors.permission_denied"
handler404 = "apps.api.errors.not_found"
handler500 = "apps.api.errors.server_error"
