; Inno Setup 6 script: per-user installer for the PyInstaller bundle (dist\overlap\).
;
; Build (Windows, after `python installers\build.py`):
;   ISCC.exe /DVersion=0.1.0 installers\windows\overlap.iss
; Output: dist\installer\overlap-desktop-setup-<Version>.exe
;
; - Installs for the current user only, without administrator rights
;   (%LOCALAPPDATA%\Programs\overlap desktop), so lab machines with locked-down
;   accounts can install it.
; - Start-menu shortcut, optional desktop shortcut, optional `overlap` on the user's PATH.
; - .ovlm files open in the GUI ("Screen an offer" with that manifest), registered
;   under HKCU\Software\Classes.
; - Upgrades in place: the AppId below never changes; a running copy is closed first and
;   the previous version's library folder is removed before the new one is copied.
; - User data (index, settings) lives outside {app} and survives upgrades and uninstalls
;   (see docs/windows.md).

#ifndef Version
  #error Pass the version: ISCC /DVersion=x.y.z installers\windows\overlap.iss
#endif
#ifndef BundleDir
  #define BundleDir "..\..\dist\overlap"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist\installer"
#endif
; Install folder override for test harnesses only (installers/windows/wine_lane.py passes
; /DInstallDir=...): wine cannot expand {autopf} for a per-user install. Releases never set it.
#ifndef InstallDir
  #define InstallDir "{autopf}\overlap desktop"
#endif
; Compression override, likewise for test harnesses only (the lane's throw-away "older
; version" installer for the upgrade test is compressed fast: /DCompression=zip).
#ifndef Compression
  #define Compression "lzma2/max"
#endif

#define AppName "overlap desktop"
#define AppExe "overlap-desktop.exe"
#define CliExe "overlap.exe"
#define AppPublisher "overlap desktop developers"
#define ProgId "OverlapDesktop.Manifest"

[Setup]
; Fixed forever: Windows and Inno Setup recognise an upgrade by this id.
AppId={{3E6B9C2D-51A4-4F7E-9B0C-8D2A6F41C7E5}
AppName={#AppName}
AppVersion={#Version}
AppVerName={#AppName} {#Version}
AppPublisher={#AppPublisher}
VersionInfoVersion={#Version}
VersionInfoProductName={#AppName}
DefaultDirName={#InstallDir}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
DisableDirPage=auto
; Per-user install: {autopf} is %LOCALAPPDATA%\Programs, registry writes go to HKCU.
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputDir={#OutputDir}
OutputBaseFilename=overlap-desktop-setup-{#Version}
SetupIconFile=..\..\resources\icons\overlap.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName} {#Version}
LicenseFile=..\..\LICENSE
WizardStyle=modern
Compression={#Compression}
SolidCompression=yes
; Close a running copy (GUI or CLI) through the Restart Manager before replacing files;
; in silent mode close it without asking.
CloseApplications=force
CloseApplicationsFilter=*.exe,*.dll,*.pyd
RestartApplications=no
ChangesAssociations=yes
ChangesEnvironment=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "addtopath"; Description: "Add the 'overlap' command to my PATH (for scripts and pipelines)"; GroupDescription: "Command line:"; Flags: unchecked

[InstallDelete]
; Clean upgrade: no library or compiled module of the previous version may survive
; next to the new one (the bundle's file list changes between versions).
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#BundleDir}\{#AppExe}"; DestDir: "{app}"; Flags: ignoreversion
Source: "{#BundleDir}\{#CliExe}"; DestDir: "{app}"; Flags: ignoreversion
Source: "{#BundleDir}\LICENSE.txt"; DestDir: "{app}"; Flags: ignoreversion
Source: "{#BundleDir}\NOTICE.txt"; DestDir: "{app}"; Flags: ignoreversion
Source: "{#BundleDir}\VERSION.txt"; DestDir: "{app}"; Flags: ignoreversion
Source: "{#BundleDir}\_internal\*"; DestDir: "{app}\_internal"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"; Comment: "How much of a video dataset offer do you already own?"
; HTML, not the .md: stock Windows has no program for .md files; every browser opens .html.
Name: "{autoprograms}\{#AppName} licences"; Filename: "{app}\_internal\licenses\THIRD-PARTY.html"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; .ovlm -> ProgId -> "overlap-desktop.exe" "<file>" (the GUI opens it in "Screen an offer").
; Values only (another program may also list itself under .ovlm); each key goes on uninstall
; once it is empty, so no empty .ovlm or OpenWithProgids key is left behind.
Root: HKCU; Subkey: "Software\Classes\.ovlm"; ValueType: string; ValueName: ""; ValueData: "{#ProgId}"; Flags: uninsdeletevalue uninsdeletekeyifempty
Root: HKCU; Subkey: "Software\Classes\.ovlm"; ValueType: string; ValueName: "Content Type"; ValueData: "application/x-overlap-manifest"; Flags: uninsdeletevalue uninsdeletekeyifempty
Root: HKCU; Subkey: "Software\Classes\.ovlm\OpenWithProgids"; ValueType: string; ValueName: "{#ProgId}"; ValueData: ""; Flags: uninsdeletevalue uninsdeletekeyifempty
Root: HKCU; Subkey: "Software\Classes\{#ProgId}"; ValueType: string; ValueName: ""; ValueData: "overlap manifest"; Flags: uninsdeletekey
Root: HKCU; Subkey: "Software\Classes\{#ProgId}\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\{#AppExe},0"
Root: HKCU; Subkey: "Software\Classes\{#ProgId}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" ""%1"""
; The Applications\<exe> key is ours alone: remove it whole (not just SupportedTypes under it).
Root: HKCU; Subkey: "Software\Classes\Applications\{#AppExe}"; Flags: uninsdeletekey
Root: HKCU; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".ovlm"; ValueData: ""; Flags: uninsdeletekey
; The user's PATH (only with the "addtopath" task; removed again by the uninstaller, which
; deletes the value if nothing else is left in it). PathWithApp, not "{olddata};{app}": that
; writes ";C:\..." when the user had no PATH of their own.
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; ValueData: "{code:PathWithApp}"; Tasks: addtopath; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Files the app may create next to itself (none by design; belt and braces).
Type: filesandordirs; Name: "{app}\_internal"

[Code]
function NeedsAddPath(Dir: string): Boolean;
var
  Paths: string;
begin
  if not RegQueryStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths) then
  begin
    Result := True;
    exit;
  end;
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Paths) + ';') = 0;
end;

{ The user's Path with Dir appended: no empty entry when Path is missing, empty or ends in ';'. }
function PathWithApp(Param: string): string;
var
  Paths: string;
begin
  Result := ExpandConstant('{app}');
  if not RegQueryStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths) then
    exit;
  while (Length(Paths) > 0) and (Paths[Length(Paths)] = ';') do
    Delete(Paths, Length(Paths), 1);
  if Paths <> '' then
    Result := Paths + ';' + Result;
end;

procedure RemoveFromPath(Dir: string);
var
  Paths: string;
  P: Integer;
begin
  if not RegQueryStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths) then
    exit;
  { Match whole entries only: ";A;dir;B;" -> ";A;B;" }
  Paths := ';' + Paths + ';';
  P := Pos(';' + Uppercase(Dir) + ';', Uppercase(Paths));
  if P > 0 then
  begin
    Delete(Paths, P, Length(Dir) + 1);
    Paths := Copy(Paths, 2, Length(Paths) - 2);
    { Nothing else in it: remove the value rather than leave an empty Path behind. }
    if Paths = '' then
      RegDeleteValue(HKEY_CURRENT_USER, 'Environment', 'Path')
    else
      RegWriteExpandStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', Paths);
  end;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usPostUninstall then
    RemoveFromPath(ExpandConstant('{app}'));
end;
