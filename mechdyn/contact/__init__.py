"""Contact force producers: each track band against its rollers, the padded shoes against the ground
(docs/contact.md). Caller-side: they read body rows and write fext; the generated dynamics never sees them."""
from .law import ContactLaw
from .producers import Contact, ContactJacobian, contact_fext

__all__ = ["Contact", "ContactJacobian", "ContactLaw", "contact_fext"]
