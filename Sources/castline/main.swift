import CastlineKit
print("castline")
