import Testing
import GstKit
