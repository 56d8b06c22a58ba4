//! What happens in an organisation, as the audit trail records it (`AuditEvent::Org`): the event's
//! name and detail; the organisation's id is the event's `org_id`.

use uuid::Uuid;

use crate::auth::audit::Actor;

/// What happened in an organisation (docs/api.md §13). The subject member, where there is one,
/// is the event's `user_id`; whoever did it, when not that member, its `actor_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrgEvent {
    Created,
    Updated,
    Deleted {
        by: Actor,
    },
    RolesChanged {
        roles: Vec<String>,
    },
    MemberRemoved,
    Left,
    Invited {
        invitation: Uuid,
    },
    InvitationDeleted {
        invitation: Uuid,
    },
    /// An invitation accepted (`new_account`: by making the account).
    Joined {
        new_account: bool,
    },
    /// A session made the organisation its active one.
    Switched,
}

impl OrgEvent {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            OrgEvent::Created => "org.created",
            OrgEvent::Updated => "org.updated",
            OrgEvent::Deleted { .. } => "org.deleted",
            OrgEvent::RolesChanged { .. } => "org.roles_changed",
            OrgEvent::MemberRemoved => "org.member_removed",
            OrgEvent::Left => "org.left",
            OrgEvent::Invited { .. } => "org.invited",
            OrgEvent::InvitationDeleted { .. } => "org.invitation_deleted",
            OrgEvent::Joined { .. } => "org.joined",
            OrgEvent::Switched => "org.switched",
        }
    }

    pub(crate) fn detail(&self) -> Option<String> {
        Some(match self {
            OrgEvent::Deleted { by } => format!("via={}", by.via()),
            OrgEvent::RolesChanged { roles } => format!("roles={}", roles.join(",")),
            OrgEvent::Invited { invitation } | OrgEvent::InvitationDeleted { invitation } => {
                format!("invitation={invitation}")
            }
            OrgEvent::Joined { new_account: true } => "new_account".into(),
            _ => return None,
        })
    }
}
